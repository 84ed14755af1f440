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

/** Wraps whatever the client threw, saying what was being done. */
export function kafkaError(error: unknown, doing: string): KafkaError {
  if (error instanceof KafkaError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  const retriable = (error as { retriable?: unknown } | null)?.retriable === true;
  return new KafkaError(`${doing}: ${detail}`, { retriable, cause: error });
}

export async function wrapKafka<T>(doing: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw kafkaError(error, doing);
  }
}
