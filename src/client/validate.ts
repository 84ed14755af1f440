/**
 * Validation before sending: a request that breaks a spec limit fails here with a
 * ValidationError naming the field, and no call is made.
 */
import { z } from 'zod';
import { describeZodError, LIMITS } from '../api/schemas.js';
import { ValidationError } from './errors.js';

interface CallContext {
  method: string;
  endpoint: string;
  submissionId?: string;
}

export function validateBody<T>(
  schema: z.ZodType<T>,
  value: unknown,
  context: CallContext,
  root?: string,
): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0];
  const path = [...(root ? [root] : []), ...(first?.path ?? []).map(String)];
  let field = path.join('.') || '(body)';
  if (first?.code === 'unrecognized_keys' && first.keys[0] !== undefined) {
    field = [...path, first.keys[0]].join('.');
  }
  const described = describeZodError(parsed.error);
  return fail(`${context.endpoint}: invalid request: ${root ? `${root}: ` : ''}${described}`, field, context);
}

const SubmissionId = z.string().min(LIMITS.submissionIdMin).max(LIMITS.submissionIdMax);

export function validateSubmissionId(id: unknown, context: CallContext): string {
  const parsed = SubmissionId.safeParse(id);
  if (parsed.success) return parsed.data;
  return fail(
    `${context.endpoint}: submission_id must be a string of ${LIMITS.submissionIdMin}..${LIMITS.submissionIdMax} characters`,
    'submission_id',
    context,
  );
}

export function fail(message: string, field: string, context: CallContext): never {
  throw new ValidationError(message, { ...context, field });
}
