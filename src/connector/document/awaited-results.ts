/**
 * Which results a document awaits: by default per pipeline (the design), the decision when enabled,
 * and `connector.awaitedResults` overriding a pipeline's list (validated here, naming what is wrong).
 */
import type { PipelineConfiguration } from '../../api/schemas.js';
import { AWAITABLE, type Awaitable } from '../types.js';

/** Results awaited per pipeline by default (the design): decision is added when enabled. */
const DEFAULT_AWAITED: Record<PipelineConfiguration, Awaitable[]> = {
  FRAUD_ONLY: ['fraud', 'quality', 'classification'],
  QUALITY_ONLY: ['quality'],
  CLASSIFICATION_ONLY: ['classification'],
};

export type AwaitedOverride = Partial<Record<PipelineConfiguration, Awaitable[]>>;

export function awaitedResults(
  pipeline: PipelineConfiguration,
  enableDecision: boolean,
  override: AwaitedOverride = {},
): Awaitable[] {
  const base = (override[pipeline] ?? DEFAULT_AWAITED[pipeline]).filter((k) => k !== 'decision');
  return enableDecision ? [...base, 'decision'] : base;
}

/** Validates the `connector.awaitedResults` configuration value, naming what is wrong. */
export function parseAwaitedOverride(value: unknown): AwaitedOverride {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('connector.awaitedResults: expected an object of pipeline → list of results');
  }
  const out: AwaitedOverride = {};
  for (const [pipeline, kinds] of Object.entries(value)) {
    if (!(pipeline in DEFAULT_AWAITED))
      throw new Error(`connector.awaitedResults: unknown pipeline ${pipeline}`);
    if (!Array.isArray(kinds) || kinds.some((k) => !AWAITABLE.includes(k as Awaitable))) {
      throw new Error(`connector.awaitedResults.${pipeline}: expected a list of ${AWAITABLE.join(', ')}`);
    }
    out[pipeline as PipelineConfiguration] = kinds as Awaitable[];
  }
  return out;
}
