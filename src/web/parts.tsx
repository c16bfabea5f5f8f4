// Small components every console page shares. Each says one thing the same way everywhere.
import { cut } from "./format.ts";

/**
 * A page's error line: announced to screen readers (role="alert") and cut, since an error
 * message may carry a whole response body. Renders nothing when there is no error.
 */
export function ErrorLine({
  error,
  testId,
}: {
  error: string | null | undefined;
  testId?: string;
}) {
  if (!error) return null;
  return (
    <p role="alert" className="bad" data-testid={testId}>
      {cut(error, 300)}
    </p>
  );
}
