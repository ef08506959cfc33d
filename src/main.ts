#!/usr/bin/env node
/** Entry point of the `anna` binary. */
import { start } from "./programs/start.ts"

void start(process.argv.slice(2))
