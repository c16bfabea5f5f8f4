// The async face of a repository: the same methods, each returning a Promise. The SQLite
// backend's repositories stay synchronous underneath; services only ever see this face, so a
// backend whose calls cross a network can stand behind the same interface.

/** `T` with every method returning a Promise (generic methods lose their type parameters). */
export type Async<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : T[K];
};

/** Wrap each prototype method of `impl`, looked up on every call (so counting wrappers see it). */
export function asyncFace<T extends object>(
  impl: T,
  own: Record<string, unknown>,
  /** Whether a call must wait for another caller's open transaction; `queue` runs it then. */
  busy: () => boolean,
  queue: (call: () => unknown) => Promise<unknown>,
): Async<T> {
  const face: Record<string, unknown> = { ...own };
  const target = impl as Record<string, (...a: unknown[]) => unknown>;
  for (
    let p = Object.getPrototypeOf(impl);
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    for (const key of Object.getOwnPropertyNames(p)) {
      if (key === "constructor" || key in face) continue;
      if (typeof Object.getOwnPropertyDescriptor(p, key)?.value !== "function") continue;
      face[key] = (...args: unknown[]) => {
        if (busy()) return queue(() => target[key]!(...args));
        try {
          return Promise.resolve(target[key]!(...args));
        } catch (err) {
          return Promise.reject(err);
        }
      };
    }
  }
  // The fields `Async<T>` keeps as they are (a counter such as agents.decoded): read through,
  // live, from the repository.
  for (const key of Object.keys(impl)) {
    if (key in face || typeof (impl as Record<string, unknown>)[key] === "function") continue;
    Object.defineProperty(face, key, {
      enumerable: true,
      get: () => (impl as Record<string, unknown>)[key],
    });
  }
  return face as Async<T>;
}
