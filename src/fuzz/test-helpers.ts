/**
 * Runs of the property-based fuzz tests. In `npm test` each property tries its quick count of
 * generated inputs (a few seconds in all); `npm run fuzz` sets FUZZ_RUNS to try that many per
 * property instead, each bounded by FUZZ_TIME_LIMIT_MS. A failure reports fast-check's seed and
 * shrunk counterexample, so it can be replayed with FUZZ_SEED.
 */
import fc from 'fast-check';

/** An async run longer than this counts as a hang and fails the property. */
const RUN_TIMEOUT_MS = 5000;

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
}

const LONG_FORM = envInt('FUZZ_RUNS') !== undefined;

function fuzzParameters(quickRuns: number): fc.Parameters<unknown> {
  const runs = envInt('FUZZ_RUNS') ?? quickRuns;
  const timeLimit = envInt('FUZZ_TIME_LIMIT_MS') ?? 120_000;
  const seed = envInt('FUZZ_SEED');
  // Only the long form is cut by time; the quick form always runs its full count.
  const plugins = [fc.timeout(RUN_TIMEOUT_MS), ...(LONG_FORM ? [fc.interruptAfterTimeLimit(timeLimit)] : [])];
  return { numRuns: runs, plugins, ...(seed === undefined ? {} : { seed }) };
}

/** Checks a property, fails the test with fast-check's report, and returns the inputs tried. */
export async function fuzz<Ts>(
  name: string,
  property: fc.IAsyncProperty<Ts> | fc.IProperty<Ts>,
  quickRuns: number,
): Promise<number> {
  const details = await fc.check(
    property as fc.IAsyncProperty<Ts>,
    fuzzParameters(quickRuns) as fc.Parameters<Ts>,
  );
  if (details.failed) throw new Error(`${name}: ${fc.defaultReportMessage(details)}`);
  if (LONG_FORM) {
    // The counts for the report; the quick form stays quiet.
    process.stdout.write(
      `fuzz ${name}: ${details.numRuns} inputs, 0 failures${details.interrupted ? ' (time limit)' : ''}\n`,
    );
  }
  return details.numRuns;
}
