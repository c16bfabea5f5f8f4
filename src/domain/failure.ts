// Loose shape for stored failure artifacts. The full provider failure artifact schema
// lives in provider.ts; records that only carry one validate it as an open object.
import { z } from "zod";

export const FailureArtifactLike = z.looseObject({
  kind: z.string(),
  message: z.string(),
});
export type FailureArtifactLike = z.infer<typeof FailureArtifactLike>;
