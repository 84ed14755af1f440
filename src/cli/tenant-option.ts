/**
 * `--tenant <tenants>` of the operator commands: comma-separated and repeatable, `-` for records of
 * no tenant (`src/operator/tenant-filter.ts`). The values are checked in the action, not by
 * commander, so that a refused value is echoed cut and escaped (commander echoes it raw).
 */
import type { Command } from 'commander';
import { NO_TENANT, tenantSelectionOf, type TenantSelection } from '../operator/tenant-filter.js';
import { UsageError } from './exit-codes.js';

/** Every value given, split later: an empty part must stay visible to be refused. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Adds `--tenant` to `command`; `what` names what it selects, e.g. "dead letters". */
export function addTenantOption(command: Command, what: string): Command {
  return command.option(
    '--tenant <tenants>',
    `only ${what} of these tenants (comma-separated, repeatable; ${NO_TENANT} for those of no tenant)`,
    collect,
  );
}

/** The selection `--tenant` made (undefined: not given); a value that selects nothing is a UsageError (exit 2). */
export function tenantsOf(flags: { tenant?: string[] }): TenantSelection | undefined {
  if (flags.tenant === undefined) return undefined;
  const parsed = tenantSelectionOf(flags.tenant);
  if ('problem' in parsed) throw new UsageError(`--tenant: ${parsed.problem}`);
  return parsed.selection;
}
