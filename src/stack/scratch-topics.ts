/**
 * Names for what one test or benchmark run makes on the shared local stack (topics, groups, subjects,
 * buckets), and the removal of that run's topics when it ends.
 *
 * The stack's state directory is shared by every clone and kept across runs, and Kafka keeps one
 * directory per partition: runs that never deleted their topics left 12,070 of them after a day, and
 * the broker (512 MB of heap) died of OutOfMemoryError. Several runs (from different worktrees) may
 * use one stack at once, so a run deletes only its own topics: every name `scratchName` makes holds
 * `-<run>-`, with the run id set once per run (jest's global set-up puts it in DOCSTREAM_TEST_RUN for
 * every worker; a benchmark makes its own, which the processes it starts inherit).
 */
import { randomBytes } from 'node:crypto';
import { KafkaClient } from '../kafka/client.js';
import { within } from '../util/within.js';

/** Where the run id lives, so that every process of one run names things alike. */
export const RUN_ENV = 'DOCSTREAM_TEST_RUN';

/** A new run id: the start time (base 36, which sorts and reads as a time) and 6 random hex digits. */
export function newRunId(now = Date.now()): string {
  return `${now.toString(36)}${randomBytes(3).toString('hex')}`;
}

/** This process's run id: the one in DOCSTREAM_TEST_RUN, else a new one, recorded there for children. */
export function currentRunId(env: NodeJS.ProcessEnv = process.env): string {
  const set = env[RUN_ENV];
  if (set && /^[a-z0-9]+$/.test(set)) return set;
  const id = newRunId();
  env[RUN_ENV] = id;
  return id;
}

/** A name unique to one use within a run: `<prefix>-<run>-<8 random hex digits>`. */
export function scratchName(prefix: string, run: string = currentRunId()): string {
  return `${prefix}-${run}-${randomBytes(4).toString('hex')}`;
}

/**
 * Whether a topic is one of the run's: a name holding `-<run>-` (a scratch name, or a topic named
 * after one, `<name>.documents.arrived`). Internal topics (a leading underscore: __consumer_offsets,
 * __transaction_state, the registry's) never are.
 */
export function isRunTopic(topic: string, run: string): boolean {
  return run.length > 0 && !topic.startsWith('_') && topic.includes(`-${run}-`);
}

/** Topics per delete request: a request for hundreds of topics outlasts the admin client's timeout. */
const DELETE_BATCH = 100;

/**
 * Deletes the topics of one run from the brokers and returns their names. Topics another run made,
 * or that no run made, are left alone.
 */
export async function deleteRunTopics(brokers: string[], run: string): Promise<string[]> {
  const admin = new KafkaClient({ brokers, clientId: 'docstream-scratch-cleanup' }).admin();
  await admin.connect();
  try {
    const mine = (await admin.listTopics()).filter((topic) => isRunTopic(topic, run)).sort();
    for (let i = 0; i < mine.length; i += DELETE_BATCH)
      await admin.deleteTopics(mine.slice(i, i + DELETE_BATCH));
    return mine;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * The end of a run: deletes its topics within `timeoutMs` and says so through `log`. Never throws, so
 * a run's own result stands when Kafka does not answer (then it says how to start the stack over).
 */
export async function sweepRunTopics(
  brokers: string[],
  log: (line: string) => void,
  { run = currentRunId(), timeoutMs = 30_000 }: { run?: string; timeoutMs?: number } = {},
): Promise<void> {
  const started = Date.now();
  const deleting = deleteRunTopics(brokers, run);
  try {
    if (!(await within(deleting, timeoutMs))) throw new Error(`no answer within ${timeoutMs / 1000} s`);
    const deleted = await deleting;
    // A few are named: what a run's own clean-up missed is worth knowing.
    const names = deleted.length > 0 && deleted.length <= 5 ? `: ${deleted.join(', ')}` : '';
    log(
      `deleted the ${deleted.length} topic(s) of this run (-${run}-) in ${Date.now() - started} ms${names}`,
    );
  } catch (err) {
    log(
      `could not delete the topics of this run (-${run}-): ${err instanceof Error ? err.message : String(err)}; ` +
        '`docstream stack down --wipe` starts the local stack over',
    );
  }
}
