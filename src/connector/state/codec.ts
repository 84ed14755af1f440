/**
 * Kept only for `decision-webhooks.ts`, whose `DecisionState.bySubmission` still names the v1 shape:
 * the state record is `record.ts` (v2, which also reads v1). Delete once the decision fast path no
 * longer looks documents up by submission.
 */
export type { DocumentStateV1 as DocumentState } from './record.js';
