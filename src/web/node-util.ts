// The browser's stand-in for node:util in the presentation layer (scripts/build-ui.mjs
// aliases it): terminal colours become plain text; the console styles items with CSS.
export function styleText(_format: unknown, text: string): string {
  return text;
}
