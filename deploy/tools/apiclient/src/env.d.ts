// The little of Node the round trip uses (no @types/node dependency).
declare const process: {
  env: Record<string, string | undefined>;
  exitCode: number | undefined;
};
