import { PLAN_CALLS_INDEX } from '../../dashboard/plan-counts'
import { UNPRICED_SPEND_INDEX } from '../../dashboard/unpriced-counts'
import type { PgMigration } from './index'

/**
 * Versions 15 on, the newest last: indexes the dashboard and budgets read by, retention's mark,
 * announced thresholds, hashed whole-key spend rows, import claims, superseded imports, and
 * what an alert claim says of its holder.
 */
export const PG_MIGRATIONS_FROM_15: PgMigration[] = [
  {
    version: 15,
    description: 'the calls of a session by time (SQLite version 24): a session cap counts a still-active session whole, however long ago it began',
    sql: ["CREATE INDEX IF NOT EXISTS calls_session_ts ON calls (session, ts) WHERE session <> ''"],
  },
  {
    version: 16,
    description: 'the time before which retention pruned calls: an old log entry whose proxied twin is gone is not imported again',
    // As SQLite's (ledger migration 13). 0 on a database pruned before this: when is not known.
    sql: [
      `CREATE TABLE retention_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        pruned_before BIGINT NOT NULL
      )`,
      'INSERT INTO retention_state (id, pruned_before) VALUES (1, 0)',
    ],
  },
  {
    version: 17,
    description: 'the budget thresholds announced in calendar periods not yet ended (SQLite version 27): not announced again after a restart',
    // By `until`: the rows of ended periods are deleted as instances save and load (budgets/announced.ts).
    sql: ['CREATE TABLE budget_announced (id TEXT PRIMARY KEY, until BIGINT NOT NULL)', 'CREATE INDEX budget_announced_until ON budget_announced (until)'],
  },
  {
    version: 18,
    description: "spend rows of a rule on a whole key name the key by its SHA-256, never the key (budgets/state/pg/sql.ts's ruleKey)",
    // `["<key>",<scope>]` becomes `["sha256:<hex>",<scope>]`, the text JSON.stringify gives (patterns
    // are visible ASCII). A row whose key is not such a list (none is written so) is left alone.
    sql: [
      `UPDATE budget_spend
          SET rule_key = '["sha256:' || encode(sha256(convert_to(rule_key::jsonb ->> 0, 'UTF8')), 'hex') || '"' ||
                         substr(rule_key, length(to_json(rule_key::jsonb ->> 0)::text) + 2)
        WHERE CASE WHEN rule_key LIKE '["%' THEN right(rule_key::jsonb ->> 0, 1) <> '*' ELSE false END`,
    ],
  },
  {
    version: 19,
    description: 'proxied calls matched to a logged call, shared by instances: another machine\'s log is not matched to one again',
    // By the logged call's keys as `call_key` derives them (importCallKey: `import:` and a SHA-256;
    // `alias` '' when it has one key): the same log read by another instance still matches it.
    // No foreign key (a claim racing a retention step would fail): a step deletes its calls' claims.
    // Calls matched before this version are claimed only in the file of the machine that matched them.
    sql: ["CREATE TABLE import_claims (call_id BIGINT PRIMARY KEY, key TEXT NOT NULL, alias TEXT NOT NULL DEFAULT '')"],
  },
  {
    version: 20,
    description: 'an imported call the proxy\'s record of the same answer superseded names that record (SQLite version 28): kept at $0, no request',
    sql: [
      'ALTER TABLE calls ADD COLUMN IF NOT EXISTS superseded_by BIGINT',
      "CREATE INDEX IF NOT EXISTS calls_import_answer ON calls (response_id) WHERE source = 'import' AND response_id <> '' AND superseded_by IS NULL",
    ],
  },
  {
    version: 21,
    description: 'the calls of no known price the dashboard\'s spend figures count as $0 (unpriced_requests), by time (SQLite version 31)',
    sql: [UNPRICED_SPEND_INDEX],
  },
  {
    version: 22,
    description: 'an alert claim names the claim that holds it (a token each claim won writes): an instance lets go only its own, not one another instance has won since',
    // Nullable with no default: a catalog change only. Rows claimed before it hold none, and no instance lets them go.
    sql: 'ALTER TABLE alert_claims ADD COLUMN IF NOT EXISTS owner TEXT',
  },
  {
    version: 23,
    description: 'the calls of a subscription plan by time (SQLite version 32): the dashboard\'s average cost per call is over the others, counted without reading them',
    sql: [PLAN_CALLS_INDEX],
  },
  {
    version: 24,
    description: "a key's spend rows by period and start: an admission counts what calls in flight reserved on the rows of its rule as it was before an edit (its scope or window length), read without the other keys' rows of the day",
    sql: 'CREATE INDEX IF NOT EXISTS budget_spend_key ON budget_spend (api_key_hash, period, period_start)',
  },
  {
    version: 25,
    description: "a settlement that added a cost keeps its key, rows and cost while its call is not stored: an admission under the rule edited since counts it, as the edited rule's rows get it only from the stored call",
    // Nullable with no default: a catalog change only. Markers written before it hold none (their
    // calls stored long since), and settlements read by no admission.
    sql: [
      'ALTER TABLE budget_settled ADD COLUMN IF NOT EXISTS api_key_hash TEXT, ADD COLUMN IF NOT EXISTS spend_ids BIGINT[], ADD COLUMN IF NOT EXISTS cost_usd DOUBLE PRECISION',
      'CREATE INDEX IF NOT EXISTS budget_settled_owed_key ON budget_settled (api_key_hash, at) WHERE owed',
    ],
  },
  {
    version: 26,
    description: 'an alert claim says when its holder last said it is alive: the claim of an instance killed outright is taken over by one standing by, not stood by for until it ages out',
    // Nullable with no default: a catalog change only. Rows without it (old builds') are never taken over so.
    sql: 'ALTER TABLE alert_claims ADD COLUMN IF NOT EXISTS alive_at TIMESTAMPTZ',
  },
  {
    version: 27,
    description: "what a settlement still owed to a key's spend row added there: read with a snapshot of its own, once an admission holds the row's lock",
    // A VOLATILE function reads with a fresh snapshot (as burnrate_window_spent, migration 6): an
    // admission that locks the key's rows of its rule as it was before an edit (budgets/state/pg/admission.ts)
    // sees the settlement that committed while it waited for them, its freed reservation and its
    // cost both, not the one without the other.
    sql: [
      `CREATE OR REPLACE FUNCTION burnrate_owed_usd(sid BIGINT, key TEXT, lease DOUBLE PRECISION) RETURNS DOUBLE PRECISION
        LANGUAGE sql VOLATILE AS $$
        SELECT COALESCE(SUM(s.cost_usd), 0)::float8 FROM budget_settled s
         WHERE s.owed AND s.api_key_hash = key AND sid = ANY(s.spend_ids) AND s.at > now() - lease * interval '1 millisecond'
      $$`,
    ],
  },
  {
    version: 28,
    description: "what the calls in flight reserved, and settlements still owe, on a key's spend rows of a rule's pattern created after an admission's statement began: read with a snapshot of its own",
    // An admission finds the other rows it locks with its statement's snapshot (budgets/state/pg/admission.ts
    // rowLocks): a row another instance's rule as edited created while the statement waited for a
    // lock is not among them. Read here once every lock is held, its reservation is not missed.
    sql: [
      `CREATE OR REPLACE FUNCTION burnrate_unseen_reserved_usd(key TEXT, rkp TEXT, per TEXT, st BIGINT, sess TEXT, seen BIGINT[], eps DOUBLE PRECISION, lease DOUBLE PRECISION)
        RETURNS DOUBLE PRECISION LANGUAGE sql VOLATILE AS $$
        SELECT (COALESCE(SUM(CASE WHEN o.reserved_usd > eps THEN o.reserved_usd ELSE 0 END), 0) + COALESCE(SUM(burnrate_owed_usd(o.id, key, lease)), 0))::float8
          FROM budget_spend o
         WHERE o.api_key_hash = key AND o.period = per AND left(o.rule_key, length(rkp)) = rkp AND o.id <> ALL(seen)
           AND (per = 'window' OR (o.period_start = st AND o.session = sess))
      $$`,
    ],
  },
  {
    version: 29,
    description: "how many of a session's requests retention pruned, on its rollup row (SQLite version 35): the dashboard's sessions list no longer counts the calls it kept",
    // Pruned before this version: the session's requests but its calls kept (not superseded), as the list counted them, once.
    // The kept calls are counted in one grouped pass: counted for each row apart, a name many agents
    // or tenants share had all its calls read once per row, dash_session locked meanwhile.
    sql: [
      'ALTER TABLE dash_session ADD COLUMN IF NOT EXISTS pruned_requests BIGINT NOT NULL DEFAULT 0',
      `UPDATE dash_session s SET pruned_requests = GREATEST(0, s.requests - coalesce(k.n, 0))
         FROM dash_session o LEFT JOIN (
           SELECT tenant, agent, session, count(*) AS n FROM calls
            WHERE session IN (SELECT session FROM dash_session WHERE session <> '' AND first_ts < (SELECT pruned_before FROM retention_state WHERE id = 1))
              AND session <> '' AND superseded_by IS NULL
            GROUP BY tenant, agent, session) k ON k.tenant = o.tenant AND k.agent = o.agent AND k.session = o.session
        WHERE o.tenant = s.tenant AND o.agent = s.agent AND o.session = s.session
          AND s.session <> '' AND s.first_ts < (SELECT pruned_before FROM retention_state WHERE id = 1)`,
    ],
  },
]
