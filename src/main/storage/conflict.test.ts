import { describe, expect, it } from 'vitest'
import { CONFLICT_ATTEMPTS, isConflict, retryOnConflict } from './conflict'

const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code })

describe('retryOnConflict', () => {
  it('runs a transaction that lost to another (deadlock, serialization failure) again, and returns what the run that committed returned', async () => {
    let runs = 0
    const value = await retryOnConflict(async () => {
      runs++
      if (runs === 1) throw pgError('40P01')
      if (runs === 2) throw pgError('40001')
      return runs
    })
    expect([value, runs]).toEqual([3, 3])
  })

  it('lets any other error through at once, and the last conflict after the attempts allowed', async () => {
    let runs = 0
    await expect(retryOnConflict(async () => {
      runs++
      throw pgError('23505')
    })).rejects.toThrow('pg 23505')
    expect(runs).toBe(1)
    runs = 0
    await expect(retryOnConflict(async () => {
      runs++
      throw pgError('40P01')
    })).rejects.toThrow('pg 40P01')
    expect(runs).toBe(CONFLICT_ATTEMPTS)
    expect([isConflict(null), isConflict(new Error('x')), isConflict(pgError('57P01'))]).toEqual([false, false, false])
  })
})
