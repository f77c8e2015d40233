/**
 * The worker thread of the service description check (src/account/description-check.ts): reads
 * the body it is given (src/spec/description-read.ts) and posts what it found. Any failure, an
 * out-of-memory included, ends the thread; the check then reports the description as too complex.
 */
import { parentPort, workerData } from "node:worker_threads";
import { readDescription } from "./description-read.js";

parentPort?.postMessage(readDescription((workerData as { body: Uint8Array }).body));
