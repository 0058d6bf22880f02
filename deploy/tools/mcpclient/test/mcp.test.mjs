// The MCP server of memoryd driven by the official TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json), over both
// transports: streamable HTTP at /mcp on the edge, and stdio through
// `memctl mcp`. run.sh starts memoryd and passes its addresses and tokens:
//
//   MEMORYD_URL      http://127.0.0.1:<http port>
//   MEMORYD_GRPC     127.0.0.1:<grpc port>
//   MEMCTL_BIN       the memctl binary
//   ADMIN_TOKEN      every role, every agent
//   ALPHA_TOKEN      an agent token for agent "alpha" only
//
// For each transport: initialize, list the tools (all ten, every argument
// described), call each tool with valid input and check its structured
// result (the SDK client also checks it against the tool's output schema),
// list and read a Layer 1 resource, and an agent token refused another
// agent's memory. Over HTTP, a request without a token is refused (401).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run.sh sets it)`);
  return v;
};
const url = env("MEMORYD_URL");
const grpcAddr = env("MEMORYD_GRPC");
const memctl = env("MEMCTL_BIN");
const adminToken = env("ADMIN_TOKEN");
const alphaToken = env("ALPHA_TOKEN");

const TOOLS = [
  "route_context", "get_causal_chain", "get_stale_facts", "set_ttl", "read_memory",
  "search_memory", "propose_memory_update", "memory_diff", "get_entity", "ingest_episode",
];
const WORD = "heliotrope";
const FACT = `- [[MinIO]] bucket mcpstorage has versioning on for the ${WORD} archive`;

// rest calls memoryd's REST edge with the admin token (the test's own
// setup and checks; the MCP server has no review tools).
async function rest(method, path, body) {
  const res = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// approve approves a proposal (unless applied already) and waits for it.
async function approve(id) {
  let p = await rest("GET", `/proposals/${id}`);
  if (p.status !== "applied") await rest("POST", `/proposals/${id}:approve`, { comment: "mcp client test" });
  for (let i = 0; i < 200; i++) {
    p = await rest("GET", `/proposals/${id}`);
    if (p.status === "applied") return p;
    assert.notEqual(p.status, "failed", JSON.stringify(p));
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`proposal ${id} was not applied: ${JSON.stringify(p)}`);
}

function httpClient(token, agent) {
  const endpoint = new URL("/mcp" + (agent ? `?agent=${agent}` : ""), url);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return { transport: new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } }) };
}

function stdioClient(token, agent) {
  const args = ["mcp", "--addr", grpcAddr, "--token", token];
  if (agent) args.push("--agent", agent);
  // memctl reads no config here: HOME points nowhere so a developer's
  // `memctl login` cannot change the test.
  return {
    transport: new StdioClientTransport({
      command: memctl, args, stderr: "pipe",
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent", XDG_CONFIG_HOME: "/nonexistent" },
    }),
  };
}

async function connect(make, token, agent) {
  const { transport } = make(token, agent);
  const client = new Client({ name: "gardenbloom-mcpclient-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

// call calls a tool that must succeed and returns its structured content.
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name} failed: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent, `${name} returns structured content`);
  assert.equal(res.content[0].type, "text", `${name} has a text rendering`);
  assert.ok(res.content[0].text.length > 0);
  return res.structuredContent;
}

// callError calls a tool that must be refused and returns the error text.
async function callError(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name} must fail: ${JSON.stringify(res)}`);
  return res.content.map((c) => c.text).join("\n");
}

// described requires a description on every argument, nested ones too.
function described(where, schema) {
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    assert.ok(prop.description, `${where}.${name} has no description`);
    described(`${where}.${name}`, prop);
  }
  if (schema.items) described(`${where}[]`, schema.items);
}

before(async () => {
  // Onboard alpha and beta, and give alpha memory through one reviewed
  // proposal, so there is something to read, search and explain.
  for (const agent of ["alpha", "beta"]) {
    const onboarded = await rest("POST", `/v1/memory/${agent}/onboard`, { snapshot: `# Snapshot: ${agent}\n\n## Role\nThe ${WORD} curator.\n` });
    await approve(onboarded.proposalId);
  }
  const first = await rest("POST", "/memory/alpha/propose", {
    runId: "run_seed1", reasoning: "mcp client test seed",
    updates: [
      { file: "facts.md", operation: "append", section: "Technical", content: FACT },
      { file: "open_loops.md", operation: "open", section: "Active", content: `Migrate the ${WORD} sources to MinIO` },
      { file: "decisions.md", operation: "add_decision", decision: { title: "Use MinIO for sources", status: "accepted",
        context: `sources of the ${WORD} garden need a home`, decision: "store them in [[MinIO]]", rationale: "S3-compatible" } },
    ],
  });
  await approve(first.proposalId);
  await rest("POST", "/memory/beta/propose", { runId: "run_seed1", reasoning: "seed",
    updates: [{ file: "facts.md", operation: "append", section: "Technical", content: "- beta keeps its secrets" }] })
    .then((p) => approve(p.proposalId));
  // The read plane follows the commit: wait until search and the graph see it.
  for (let i = 0; i < 200; i++) {
    const hits = await rest("GET", `/memory/search?q=${WORD}&agentId=alpha`);
    const why = await fetch(`${url}/decisions/why?query=minio`, { headers: { Authorization: `Bearer ${adminToken}` } });
    if (hits.results?.length > 0 && why.ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail("the read plane did not catch up");
});

for (const [transportName, make] of [["streamable HTTP", httpClient], ["stdio (memctl mcp)", stdioClient]]) {
  describe(`MCP over ${transportName}`, () => {
    let client; // alpha's agent token, default agent alpha
    let denied; // alpha's agent token, no default agent
    before(async () => {
      client = await connect(make, alphaToken, "alpha");
      denied = await connect(make, alphaToken, "");
    });
    after(async () => {
      await client?.close();
      await denied?.close();
    });

    test("initialize", () => {
      assert.equal(client.getServerVersion().name, "garden-bloom-memory");
      assert.ok(client.getServerCapabilities().tools);
      assert.ok(client.getServerCapabilities().resources);
      assert.match(client.getInstructions(), /propose_memory_update/);
    });

    test("list tools: all ten, every argument described", async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
      for (const tool of tools) {
        assert.ok(tool.description, `${tool.name} has a description`);
        assert.equal(tool.inputSchema.type, "object");
        assert.ok(tool.outputSchema, `${tool.name} has an output schema`);
        described(tool.name, tool.inputSchema);
      }
      const route = tools.find((t) => t.name === "route_context");
      assert.equal(route.inputSchema.properties.max_tokens.default, 2000);
      assert.deepEqual(route.inputSchema.required, ["query"]);
    });

    test("route_context", async () => {
      const out = await call(client, "route_context", { query: `where are the ${WORD} sources` });
      assert.equal(out.status, "success");
      assert.equal(out.agent_id, "alpha");
      assert.equal(out.max_tokens, 2000);
      assert.ok(out.tokens_used > 0 && out.tokens_used <= 2000);
      assert.ok(out.facts.includes(FACT), JSON.stringify(out.facts));
      assert.match(out.context, new RegExp(`The ${WORD} curator`));
    });

    test("read_memory", async () => {
      const out = await call(client, "read_memory", { mode: "wide" });
      assert.equal(out.agent_id, "alpha");
      assert.ok(out.version >= 2);
      assert.ok(out.files.some((f) => f.file === "facts.md" && f.content.includes("mcpstorage")));
    });

    test("search_memory", async () => {
      const out = await call(client, "search_memory", { query: WORD, top_k: 5 });
      assert.ok(out.results.length > 0);
      assert.ok(out.results.every((r) => r.agent_id === "alpha"));
    });

    test("get_entity", async () => {
      const out = await call(client, "get_entity", { entity_id: "minio" });
      assert.equal(out.entity.entity_id, "minio");
      assert.ok(out.refs.some((r) => r.includes("memory/alpha/")));
    });

    test("get_causal_chain", async () => {
      const out = await call(client, "get_causal_chain", { query: "minio" });
      assert.equal(out.status, "success");
      assert.equal(out.chain[0].title, "Use MinIO for sources");
      assert.match(out.mermaid, /^flowchart/);
    });

    test("memory_diff", async () => {
      const out = await call(client, "memory_diff", { format: "facts" });
      assert.equal(out.agent_id, "alpha");
      assert.ok(out.changes.some((c) => c.item === "fact" && c.change === "added"));
    });

    test("propose_memory_update", async () => {
      const { version } = await call(client, "read_memory", {});
      const out = await call(client, "propose_memory_update", {
        updates: [{ file: "facts.md", operation: "append", section: "Technical", content: `- proposed over ${transportName}` }],
        reasoning: "learned in the MCP client test", expected_version: version,
      });
      assert.equal(out.agent_id, "alpha");
      assert.ok(["pending", "approved", "applied"].includes(out.status), out.status);
      // Made with the caller's token: the proposal names its subject.
      const stored = await rest("GET", `/proposals/${out.proposal_id}`);
      assert.equal(stored.proposedBy, "mcpclient-alpha");
    });

    test("ingest_episode", async () => {
      const episode = {
        episode_id: `ep-${transportName.split(" ")[0].toLowerCase()}`, task_text: `Upload the ${WORD} sources`,
        summary: "Uploaded; the first attempt timed out.", used_skills: ["minio-client"], touched_artifacts: ["scripts/upload.sh"],
        outcome: { status: "partial", severity: "low" }, errors: ["upload timed out after 30s"], fix: "raise the timeout",
        context: "ops/storage/minio", tests: [{ name: "upload-smoke", result: "pass", duration_ms: 120 }],
        environment: { os: "linux", runtime: "node20", tooling: ["mc"] }, timestamp: "2026-03-01T09:30:00Z", duration: "45s",
      };
      const out = await call(client, "ingest_episode", { episode });
      assert.equal(out.episode_id, episode.episode_id);
      assert.match(out.run_file, /^runs\/run_.*\.md$/);
      const again = await call(client, "ingest_episode", { episode });
      assert.equal(again.duplicate, true);
      assert.equal(again.proposal.proposal_id, out.proposal.proposal_id);
    });

    test("set_ttl", async () => {
      const out = await call(client, "set_ttl", { fact: FACT, ttl_seconds: 7 * 24 * 3600, on_expire: "archive" });
      assert.ok(out.proposal.proposal_id);
      assert.ok(Date.parse(out.expires_at) > Date.now() + 6 * 24 * 3600 * 1000);
    });

    test("get_stale_facts", async () => {
      const out = await call(client, "get_stale_facts", { include_archived: true });
      assert.equal(out.agent_id, "alpha");
      assert.ok(Array.isArray(out.facts));
    });

    test("resources: Layer 1 files", async () => {
      const { resourceTemplates } = await client.listResourceTemplates();
      assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(),
        ["memory://{agent_id}/facts.md", "memory://{agent_id}/open_loops.md", "memory://{agent_id}/snapshot.md"]);
      const { resources } = await client.listResources();
      assert.ok(resources.some((r) => r.uri === "memory://alpha/facts.md"), "the default agent's files are listed");
      const facts = await client.readResource({ uri: "memory://alpha/facts.md" });
      assert.equal(facts.contents[0].mimeType, "text/markdown");
      assert.ok(facts.contents[0].text.includes("mcpstorage"));
    });

    test("an agent token reaches only its own agents", async () => {
      const msg = await callError(denied, "read_memory", { agent_id: "beta" });
      assert.match(msg, /^PERMISSION_DENIED \(PermissionDenied\): /);
      assert.ok(!msg.includes("beta keeps its secrets"));
      await assert.rejects(client.readResource({ uri: "memory://beta/facts.md" }), /PERMISSION_DENIED/);
    });

    test("bad input: a precise tool error", async () => {
      const noAgent = await callError(denied, "read_memory", {});
      assert.match(noAgent, /^INVALID_AGENT_ID .*\[field=agent_id\]/);
      const badEnum = await callError(client, "read_memory", { mode: "everything" });
      assert.match(badEnum, /^INVALID_ARGUMENT .*\[field=mode\]/);
    });
  });
}

describe("streamable HTTP without a usable token", () => {
  test("no token: refused with 401 before any MCP handling", async () => {
    const client = new Client({ name: "no-token", version: "1.0.0" });
    await assert.rejects(client.connect(httpClient("", "alpha").transport), (err) => {
      assert.ok(err instanceof StreamableHTTPError || /401|Unauthorized/.test(String(err)), String(err));
      return true;
    });
  });
  test("the refusal has the REST edge's error shape", async () => {
    const res = await fetch(new URL("/mcp", url), {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "fetch", version: "1" } } }),
    });
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate"), /^Bearer realm="garden-bloom-memory"/);
    const body = await res.json();
    assert.equal(body.code, 16);
    assert.equal(body.details[0].reason, "UNAUTHENTICATED");
  });
});
