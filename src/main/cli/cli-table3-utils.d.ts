/**
 * cli-table3's own measure of a cell (its src/utils.js, the package's files): the columns a
 * terminal gives the text (string-width: two for an emoji or a CJK character, none for a
 * combining accent; colour codes ignored), widest line of it. The table pads every cell by it.
 */
declare module 'cli-table3/src/utils.js' {
  export function strlen(text: string): number
  /** `text` cut to `width` columns (as strlen measures), ending in `end` when cut. */
  export function truncate(text: string, width: number, end?: string): string
}
