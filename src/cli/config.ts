import type { Command } from "commander";
export function registerConfigCommands(_program: Command): void {}
