import { connectionHint, securityHint, type ConnectionSettings } from './security-hints.js';

/**
 * One error type for Kafka failures, so callers decide retry-or-stop without knowing the client
 * library: `retriable` is the client's own verdict (network, leader moves, coordinator loading).
 */
export class KafkaError extends Error {
  readonly retriable: boolean;
  constructor(message: string, options: { retriable: boolean; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = 'KafkaError';
    this.retriable = options.retriable;
  }
}

/** The error and its causes (kafkajs nests them in `cause` and in aggregate `errors`). */
export function errorChain(error: unknown): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  const queue: unknown[] = [error];
  while (queue.length > 0 && out.length < 20) {
    const current = queue.shift();
    if (current === null || typeof current !== 'object') continue;
    const record = current as Record<string, unknown>;
    out.push(record);
    if (record.cause !== undefined) queue.push(record.cause);
    if (Array.isArray(record.errors)) queue.push(...(record.errors as unknown[]));
  }
  return out;
}

/** The resource each of Kafka's authorization errors is about. */
const AUTHORIZATION_FAILURES: Record<string, string> = {
  TOPIC_AUTHORIZATION_FAILED: 'topic',
  GROUP_AUTHORIZATION_FAILED: 'group',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'transactional id',
  CLUSTER_AUTHORIZATION_FAILED: 'cluster',
};

/** The ACL operation a request needs, from what was being done (`doing` names the resource). */
function operationOf(doing: string): string {
  if (/^(producing|sending|writing|recording|committing a transaction)/i.test(doing)) return 'Write';
  if (/^creating/i.test(doing)) return 'Create';
  if (/config/i.test(doing)) return 'DescribeConfigs';
  if (/^(describing|listing)/i.test(doing)) return 'Describe';
  if (/^(reading|fetching|consuming|joining|restoring|subscribing|committing)/i.test(doing)) return 'Read';
  return 'the operation this request needs';
}

/**
 * What the broker's authorizer refused, as the ACL to grant; undefined when the failure is not an
 * authorization one. kafkajs hides a group's GROUP_AUTHORIZATION_FAILED behind "Failed to find
 * group coordinator" (it tries each broker and keeps none of their answers), so that one is named
 * as the likely cause, not as certain.
 */
export function authorizationHint(error: unknown, doing: string): string | undefined {
  for (const e of errorChain(error)) {
    const resource = typeof e.type === 'string' ? AUTHORIZATION_FAILURES[e.type] : undefined;
    if (resource) {
      return `not authorized (${String(e.type)}): Kafka's ACLs do not give this principal ${operationOf(doing)} on the ${resource} of this request; \`docstream topology\` prints the ACLs each command needs`;
    }
    if (e.name === 'KafkaJSGroupCoordinatorNotFound') {
      return `no coordinator found for the group; with Kafka's authorizer on, this is how a principal without Read on the group is refused (GROUP_AUTHORIZATION_FAILED): grant it Read on the group (\`docstream topology\` prints the ACLs each command needs)`;
    }
  }
  return undefined;
}

/** Wraps whatever the client threw, saying what was being done. */
export function kafkaError(error: unknown, doing: string): KafkaError {
  if (error instanceof KafkaError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  const retriable = (error as { retriable?: unknown } | null)?.retriable === true;
  // A connection refused for a security reason names the setting to fix first.
  const hint = securityHint(error);
  if (hint) return new KafkaError(`${hint} (${doing}: ${detail})`, { retriable: false, cause: error });
  // A request the authorizer refused names the ACL to grant (the client's verdict on retrying kept:
  // a coordinator not found may also be a broker restarting).
  const refused = authorizationHint(error, doing);
  return new KafkaError(refused ? `${doing}: ${refused} (${detail})` : `${doing}: ${detail}`, {
    retriable,
    cause: error,
  });
}

/**
 * Connects a client: a failure is explained by the setting to fix when the error says which (a
 * security setting, or the address and protocol in `connectionHint`), keeping the client's verdict
 * on retrying.
 */
export async function connectKafka(
  doing: string,
  settings: ConnectionSettings | undefined,
  connect: () => Promise<void>,
): Promise<void> {
  try {
    await connect();
  } catch (error) {
    const wrapped = kafkaError(error, doing);
    const hint = settings && !securityHint(error) ? connectionHint(error, settings) : undefined;
    if (!hint) throw wrapped;
    throw new KafkaError(`${hint} (${wrapped.message})`, { retriable: wrapped.retriable, cause: error });
  }
}

export async function wrapKafka<T>(doing: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw kafkaError(error, doing);
  }
}

/**
 * A message bigger than Kafka accepts for its topic. Raised for that one message before it is sent
 * (`fromBroker` false), or when the broker answered MESSAGE_TOO_LARGE (`fromBroker` true). Never
 * retriable: the same bytes fail the same way; the caller dead-letters or shrinks the message.
 */
export class MessageTooLargeError extends KafkaError {
  readonly topic: string;
  /** Bytes the message takes on the wire (an upper bound of the record's size in its batch). */
  readonly size: number;
  /** The limit this producer applied to the topic, in bytes (the broker's may be lower when `fromBroker`). */
  readonly limit: number;
  readonly fromBroker: boolean;
  constructor(details: { topic: string; size: number; limit: number; fromBroker: boolean; cause?: unknown }) {
    super(
      details.fromBroker
        ? `producing to ${details.topic}: the broker refused ${details.size} bytes as too large for the topic's max.message.bytes (this producer's limit: ${details.limit})`
        : `producing to ${details.topic}: a message of ${details.size} bytes exceeds the limit of ${details.limit} bytes`,
      { retriable: false, cause: details.cause },
    );
    this.name = 'MessageTooLargeError';
    this.topic = details.topic;
    this.size = details.size;
    this.limit = details.limit;
    this.fromBroker = details.fromBroker;
  }
}

/** True when the error, or any error in its cause chain, is Kafka's MESSAGE_TOO_LARGE answer. */
export function isMessageTooLarge(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 10; depth++) {
    if (current instanceof MessageTooLargeError) return true;
    const type = (current as { type?: unknown }).type;
    if (type === 'MESSAGE_TOO_LARGE' || type === 'RECORD_LIST_TOO_LARGE') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Kafka does not take this member's writes now (a state or output write failed transiently, or the
 * consumer lost its group): transient, the input pauses and nothing new is submitted until it does.
 */
export class KafkaUnavailableError extends KafkaError {
  constructor(reason: string) {
    super(`Kafka is unavailable (${reason}): no new submission is created until it takes writes again`, {
      retriable: true,
    });
    this.name = 'KafkaUnavailableError';
  }
}

/**
 * True when Kafka did not take a write for a transient reason: the client's "retriable" verdict on
 * the error or any of its causes (a connection failure that kafkajs retried until it gave up counts,
 * though kafkajs marks the giving-up itself non-retriable). A record too large, a fenced or closed
 * transactional writer are not transient.
 */
export function isTransientKafkaFailure(error: unknown): boolean {
  if (!(error instanceof KafkaError) || isMessageTooLarge(error)) return false;
  return errorChain(error).some((e) => e.retriable === true);
}
