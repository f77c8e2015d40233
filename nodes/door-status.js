"use strict";
// Node-RED entry point; the logic is compiled from src/nodes/door-status.ts
module.exports = require("../dist/src/nodes/door-status.js");
