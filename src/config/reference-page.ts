/** The generated part of docs/configuration.md: the text between its two markers. */
export const REFERENCE_START = '<!-- config-reference:start (generated: npm run docs:config) -->';
export const REFERENCE_END = '<!-- config-reference:end -->';

/** The generated table of the page, or undefined when a marker is missing. */
export function referenceOf(page: string): string | undefined {
  const start = page.indexOf(REFERENCE_START);
  const end = page.indexOf(REFERENCE_END);
  if (start < 0 || end < start) return undefined;
  return page.slice(start + REFERENCE_START.length, end).trim();
}

export function replaceBetweenMarkers(page: string, table: string): string {
  const start = page.indexOf(REFERENCE_START);
  const end = page.indexOf(REFERENCE_END);
  if (start < 0 || end < start)
    throw new Error(`docs/configuration.md: no ${REFERENCE_START} ... ${REFERENCE_END}`);
  return `${page.slice(0, start + REFERENCE_START.length)}\n\n${table}\n\n${page.slice(end)}`;
}
