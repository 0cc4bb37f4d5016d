// Part 3 of CI's schedules (see part.ts), in a worker of its own.
import { explorePart } from './part.js';

explorePart(3);
