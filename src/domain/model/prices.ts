/**
 * Model prices: what the operator says a model's tokens cost, in USD per million tokens (anna
 * ships no price list: prices change and differ per contract, and a guessed price would be worse
 * than none). A cache price left unset means the input price. Pure: checks and formatting only;
 * stored by ProviderStore, applied to the usage log in SQL by UsageLog.
 */

/** The currency of every price and cost. */
export const CURRENCY = "USD"

/** The highest price accepted, per million tokens (a typo guard, far above any real price). */
export const MAX_PRICE = 10_000

/** A price as given: USD per million tokens; cache prices absent or null = the input price. */
export interface PriceInput {
  readonly input: number
  readonly output: number
  readonly cacheRead?: number | null | undefined
  readonly cacheWrite?: number | null | undefined
}

/** A stored price of one provider's model. */
export interface ModelPrice {
  readonly providerId: string
  readonly model: string
  readonly input: number
  readonly output: number
  /** null: the input price. */
  readonly cacheRead: number | null
  readonly cacheWrite: number | null
}

const amountProblem = (name: string, value: number): string | undefined =>
  Number.isFinite(value) && value >= 0 && value <= MAX_PRICE
    ? undefined
    : `the ${name} price must be a number of USD per million tokens from 0 to ${MAX_PRICE}; got ${value}`

/** Why a price cannot be stored, or undefined. */
export const priceProblem = (model: string, price: PriceInput): string | undefined => {
  if (model.trim() === "") return "a model id is needed"
  if (model !== model.trim()) return `model id "${model}" has spaces around it`
  if (model.length > 256) return "a model id is at most 256 characters"
  return amountProblem("input", price.input) ??
    amountProblem("output", price.output) ??
    (price.cacheRead === undefined || price.cacheRead === null ? undefined : amountProblem("cache read", price.cacheRead)) ??
    (price.cacheWrite === undefined || price.cacheWrite === null ? undefined : amountProblem("cache write", price.cacheWrite))
}

/** `$0.0123` under a dollar, `$12.35` from one up. */
export const formatUsd = (usd: number): string => `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`
