// The `holon` command. Command groups register cheap definitions here; each action
// imports its heavy modules lazily so `holon --help` and `holon status` start fast.
import { Command } from "commander";
import { registerConfigCommands } from "./config.ts";

const program = new Command();
program
  .name("holon")
  .description("Headless, event-driven runtime for long-lived AI agents")
  .version("0.1.0");

registerConfigCommands(program);

await program.parseAsync(process.argv);
