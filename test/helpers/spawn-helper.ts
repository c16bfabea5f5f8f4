// For the test files about the spawn helper and its spares, the sandbox, what commands
// inherit, and a default host's budgets: their hosts keep the helper and its spare wrappers,
// as a user's host does (the setup file turns them off for the others: isolated-home.ts).
// Call at the top of the file, before any host starts.
export function useSpawnHelper(): void {
  delete process.env.HOLON_SPAWN_HELPER;
}
