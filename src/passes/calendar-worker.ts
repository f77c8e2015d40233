/**
 * The worker thread that reads a booking calendar's feed (src/passes/calendar.ts readFeed) and
 * posts the bookings: a feed of megabytes is parsed here, never on Node-RED's event loop. Any
 * failure, an out-of-memory included, ends the thread; the reader then reports the feed unreadable.
 */
import { parentPort, workerData } from "node:worker_threads";
import { type CalendarSettings, readFeed } from "./calendar.js";

const { text, settings, now } = workerData as { text: string; settings: CalendarSettings; now: number };
parentPort?.postMessage(readFeed(text, settings, now));
