#!/usr/bin/env node
/** Entry point of the `anna` binary. */
import { runMain } from "./programs/cli.ts"

runMain()
