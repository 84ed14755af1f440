/**
 * The tenant selection of the operator commands (`--tenant` of `dlq list`, `dlq redrive`, `inspect`):
 * tenant names, and `-` for records of no tenant (the deployment's default credentials). `-` can
 * never be a tenant's name (a-z and 0-9 only), so every tenant stays selectable by its name.
 */
import { TENANT_NAME } from '../serde/input.js';

/** How a selection spells "no tenant", as the commands' tables print a null tenant. */
export const NO_TENANT = '-';

/** Selected tenants; null stands for records of no tenant. */
export type TenantSelection = ReadonlyArray<string | null>;

/** Longest part of a refused value that a message echoes. */
const SHOWN = 40;

/** Why one comma-separated part of `--tenant` can select nothing (empty, not a tenant name), or null. */
export function tenantProblem(part: string): string | null {
  if (part.length === 0)
    return `an empty tenant id: give tenant names (a-z, 0-9), or ${NO_TENANT} for records of no tenant`;
  if (part === NO_TENANT || TENANT_NAME.test(part)) return null;
  // Echoed cut and escaped: the value may carry a terminal's control sequences.
  const shown = JSON.stringify(part.slice(0, SHOWN)) + (part.length > SHOWN ? '…' : '');
  return `${shown} is not a tenant name (1..61 characters a-z and 0-9), nor ${NO_TENANT} for records of no tenant`;
}

/**
 * The selection of the given `--tenant` values (each comma-separated, parts trimmed), or the first
 * problem. Duplicates are kept once.
 */
export function tenantSelectionOf(
  values: readonly string[],
): { selection: TenantSelection } | { problem: string } {
  const selection: Array<string | null> = [];
  for (const value of values) {
    for (const raw of value.split(',')) {
      const part = raw.trim();
      const problem = tenantProblem(part);
      if (problem !== null) return { problem };
      const tenant = part === NO_TENANT ? null : part;
      if (!selection.includes(tenant)) selection.push(tenant);
    }
  }
  return { selection };
}

/** Whether a record of `tenant` (null: none) is selected; no selection selects every record. */
export function tenantSelected(tenant: string | null, selection: TenantSelection | undefined): boolean {
  return selection === undefined || selection.length === 0 || selection.includes(tenant);
}
