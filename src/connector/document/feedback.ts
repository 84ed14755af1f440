/**
 * One `documents.feedback` record: decoded, then sent to the API's feedback endpoint. A record that
 * cannot be read, or feedback the API refuses for good, becomes a dead letter (stage `feedback`); a
 * retriable API failure is thrown, so the record is fetched and tried again.
 */
import type { FeedbackRequest } from '../../api/schemas.js';
import type { IncomingMessage } from '../../kafka/consumer.js';
import { decodeFeedbackEvent, type AvroDecoder } from '../../serde/input.js';
import { sourceOf } from './arrivals.js';
import { deadLetterOf, failureOf, type DeadLetterSink } from '../outputs/dead-letters.js';

interface FeedbackDeps {
  decoder: AvroDecoder;
  api: { putFeedback(submissionId: string, feedback: FeedbackRequest): Promise<unknown> };
  deadLetter: DeadLetterSink;
}

export function feedbackHandler(deps: FeedbackDeps): (message: IncomingMessage) => Promise<void> {
  return async (message) => {
    const source = sourceOf(message);
    const decoded = await decodeFeedbackEvent(message.value, deps.decoder);
    if (!decoded.ok) {
      await deps.deadLetter(
        deadLetterOf(
          decoded,
          { source, event_id: decoded.event_id, submission_id: null, attributes: decoded.attributes },
          { stage: 'feedback', fallbackCode: decoded.code, attempts: 1 },
        ),
      );
      return;
    }
    const { event } = decoded;
    try {
      await deps.api.putFeedback(event.submission_id, event.feedback);
    } catch (err) {
      const f = failureOf(err);
      if (f.retriable && f.status !== 404) throw err;
      await deps.deadLetter(
        deadLetterOf(
          err,
          {
            source,
            event_id: event.event_id,
            submission_id: event.submission_id,
            attributes: event.attributes,
          },
          { stage: 'feedback', fallbackCode: 'feedback_failed' },
        ),
      );
    }
  };
}
