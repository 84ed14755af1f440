/**
 * The group-id prefixes of the readers that consume outside the connector's group: kafkajs has no
 * manual assignment, so each reader joins a group of its own, `<prefix>-<uuid>`, and never commits.
 * Their Group ACLs are prefixed ACLs on these (`src/connector/acls.ts`).
 */
export const READER_GROUP_PREFIXES = {
  /** The state topic restored per owned partition (`changelog.ts`). */
  changelog: 'docstream-changelog',
  /** Single input records re-read by partition and offset (`record-reader.ts`). */
  recordReader: 'docstream-record-reader',
  /** The webhook topic every instance tails (`view.ts`). */
  webhookView: 'docstream-webhook-view',
  /** A topic read once to its end by an operator command (`topic-range.ts`). */
  operator: 'docstream-operator',
} as const;

export type ReaderGroup = keyof typeof READER_GROUP_PREFIXES;
