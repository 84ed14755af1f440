import { sampleBytes } from '../demo/corpus.js';
import { inspectFile, type FileFacts } from './analysis/inspect.js';
import { UploadScanner } from './analysis/scanner.js';
import { applyConfigPatch, defaultConfig, type SandboxConfig } from './config.js';
import { seededRandom } from './random.js';
import { SubmissionStore, type Submission } from './submissions.js';
import type { StoredUpload } from './upload-store.js';

async function factsOf(bytes: Buffer): Promise<FileFacts> {
  const scanner = new UploadScanner();
  scanner.update(bytes);
  return inspectFile(bytes, scanner.finish());
}

/** A store on `config`; `analysed` runs the upload of `facts` and returns when its results are drawn. */
function store(config: SandboxConfig) {
  const random = seededRandom(1);
  const submissions = new SubmissionStore(
    () => config,
    () => random,
    { decisionReady: () => undefined },
  );
  return async (pipeline: Submission['pipeline'], facts: FileFacts): Promise<Submission> => {
    const s = submissions.create('c', {
      queryId: null,
      pipeline,
      enableDecision: false,
      enableCharacteristics: false,
    });
    const file: StoredUpload = {
      kind: 'memory',
      sha256: facts.sha256,
      size: facts.size,
      inspect: async () => ({ facts, cacheable: true }),
      discard: () => undefined,
    };
    const analysed = Promise.resolve(facts);
    submissions.uploaded(s, file, analysed);
    await analysed;
    await new Promise((r) => setImmediate(r));
    return s;
  };
}

describe('processing times', () => {
  it('take the one distribution by default, whatever the pipeline or file size', async () => {
    const facts = await factsOf(await sampleBytes('clean-pdf'));
    const analyse = store(
      applyConfigPatch(defaultConfig(), { processing: { distribution: 'fixed', meanMs: 700 } }),
    );
    for (const [pipeline, kind] of [
      ['FRAUD_ONLY', 'fraud'],
      ['QUALITY_ONLY', 'quality'],
    ] as const) {
      const s = await analyse(pipeline, { ...facts, size: 50 * 1024 * 1024 });
      // Within the time the test itself takes between create and analysis.
      expect(s.results[kind]!.readyAt - s.created).toBeGreaterThanOrEqual(700);
      expect(s.results[kind]!.readyAt - s.created).toBeLessThan(1700);
    }
  });

  it('follow a pipeline’s own distribution, and grow with the file by msPerMiB', async () => {
    const facts = await factsOf(await sampleBytes('clean-pdf'));
    const config = applyConfigPatch(defaultConfig(), {
      processing: {
        distribution: 'fixed',
        meanMs: 4000,
        byPipeline: { QUALITY_ONLY: { distribution: 'fixed', meanMs: 1000 } },
        msPerMiB: 500,
      },
    });
    const analyse = store(config);
    const readyIn = (s: Submission, kind: 'fraud' | 'quality') => s.results[kind]!.readyAt - s.created;
    const quick = await analyse('QUALITY_ONLY', { ...facts, size: 0 });
    const slow = await analyse('FRAUD_ONLY', { ...facts, size: 0 });
    const large = await analyse('FRAUD_ONLY', { ...facts, size: 4 * 1024 * 1024 });
    // Within the time the test itself takes between create and analysis.
    expect(readyIn(quick, 'quality')).toBeGreaterThanOrEqual(1000);
    expect(readyIn(quick, 'quality')).toBeLessThan(2000);
    expect(readyIn(slow, 'fraud')).toBeGreaterThanOrEqual(4000);
    expect(readyIn(slow, 'fraud')).toBeLessThan(5000);
    // 4 MiB at 500 ms per MiB: 2 s more.
    expect(readyIn(large, 'fraud')).toBeGreaterThanOrEqual(6000);
    expect(readyIn(large, 'fraud')).toBeLessThan(7000);
  });

  it('refuses an unknown pipeline and a distribution whose min exceeds its max, naming the field', () => {
    const base = defaultConfig();
    expect(() =>
      applyConfigPatch(base, { processing: { byPipeline: { FAST: { distribution: 'fixed', meanMs: 1 } } } }),
    ).toThrow(/processing\.byPipeline/);
    expect(() =>
      applyConfigPatch(base, {
        processing: {
          byPipeline: { QUALITY_ONLY: { distribution: 'uniform', meanMs: 5, minMs: 9, maxMs: 3 } },
        },
      }),
    ).toThrow(/processing\.byPipeline\.QUALITY_ONLY\.minMs/);
    expect(() => applyConfigPatch(base, { processing: { msPerMiB: -1 } })).toThrow(/processing\.msPerMiB/);
    // null clears them again.
    const set = applyConfigPatch(base, {
      processing: { msPerMiB: 5, byPipeline: { FRAUD_ONLY: { distribution: 'fixed', meanMs: 1 } } },
    });
    const cleared = applyConfigPatch(set, { processing: { msPerMiB: null, byPipeline: null } });
    expect([cleared.processing.msPerMiB, cleared.processing.byPipeline]).toEqual([null, null]);
  });
});
