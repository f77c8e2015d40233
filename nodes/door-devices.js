"use strict";
// Node-RED entry point; the logic is compiled from src/nodes/door-devices.ts
module.exports = require("../dist/src/nodes/door-devices.js");
