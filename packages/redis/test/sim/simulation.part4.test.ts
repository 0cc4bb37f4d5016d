// Part 4 of CI's schedules (see part.ts), in a worker of its own.
import { explorePart } from './part.js';

explorePart(4);
