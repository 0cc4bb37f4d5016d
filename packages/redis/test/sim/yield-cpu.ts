// A setup file of the simulation project (vitest.config.ts): each of its workers runs at a lower CPU priority, so
// that the schedules it explores take only what the rest of `npm test` (scripts/test.mjs), running beside them,
// leaves idle. The verdict is the same whatever the priority: the simulation reads no real clock.
import { setPriority } from 'node:os';

try {
  setPriority(10);
} catch {
  // A system that refuses (no permission to change it) runs the schedules at the usual priority: slower, still right.
}
