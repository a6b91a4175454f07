#!/usr/bin/env node
// openai_node_bench.js BASE_URL CONCURRENCY REQUESTS RESULT [PREFIX]
//
// A streaming benchmark written the way a user writes one with the openai
// npm SDK (v4), for `tokentap audit` to audit (docs/audit.md). `openai` is
// required from NODE_PATH (e.g. NODE_PATH=/tmp/nodetest/node_modules).
// BASE_URL is like http://127.0.0.1:PORT (/v1 is appended). It sends
// REQUESTS streamed chat completions,
//   client.chat.completions.create({model: 'm', stream: true, max_tokens: 16,
//       stream_options: {include_usage: true}, messages: [...]},
//       {headers: {'x-request-id': PREFIX + i}})        (PREFIX default node-)
// from a simple async pool of CONCURRENCY workers (the SDK's keep-alive
// agent reuses connections; maxRetries 0, so that one record is one POST),
// and times each with the naive loop most users write:
//   start = process.hrtime.bigint() (CLOCK_MONOTONIC) before create();
//   for every chunk of the stream, now = process.hrtime.bigint():
//     the FIRST chunk, whatever it carries, sets ttft = now - start (so
//       vLLM's role-only first chunk sets TTFT);
//     every later chunk pushes now - previous chunk into itls (so the ITLs
//       include the role chunk and the usage chunk: one or two gaps more
//       than tokens - 1);
//   latency = the loop's end - start (after the stream's last chunk);
//   output tokens = chunk.usage.completion_tokens when a chunk carried
//     usage, else the number of chunks (role and usage chunks included).
// RESULT is written in vllm's --save-result --save-detailed layout, the key
// set of tests/e2e/vllm_like_client.py: start_times (s, from hrtime), ttfts,
// itls, latencies (s), output_lens, input_lens (usage.prompt_tokens, else
// 10), generated_texts, errors, completed, failed, request_id_prefix, ...
// A request that throws (HTTP error, an error event, a broken stream) or
// ends with no chunk is recorded failed as vllm records one: errors[i] the
// message (non-empty), ttfts[i] 0, itls[i] [], latencies[i] 0,
// output_lens[i] 0, generated_texts[i] ""; start_times[i] stays.
//
// Exit status: 0 when RESULT was written (failed requests included); 2 bad
// usage; 1 when the script itself cannot run (no openai module, RESULT not
// writable).
'use strict';
const fs = require('fs');

function usage(msg) {
    if (msg) process.stderr.write(`openai_node_bench.js: ${msg}\n`);
    process.stderr.write('usage: node openai_node_bench.js BASE_URL CONCURRENCY REQUESTS RESULT [PREFIX]\n');
    process.exit(2);
}

const argv = process.argv.slice(2);
if (argv.length < 4 || argv.length > 5) usage();
const baseURL = argv[0].replace(/\/+$/, '') + '/v1';
const concurrency = Number(argv[1]);
const nReq = Number(argv[2]);
const resultPath = argv[3];
const prefix = argv.length > 4 ? argv[4] : 'node-';
if (!Number.isInteger(concurrency) || concurrency < 1) usage(`bad CONCURRENCY ${argv[1]}`);
if (!Number.isInteger(nReq) || nReq < 0) usage(`bad REQUESTS ${argv[2]}`);

let OpenAI;
try {
    const mod = require('openai');
    OpenAI = mod.OpenAI || mod.default || mod;
} catch (e) {
    process.stderr.write(`openai_node_bench.js: cannot load the openai module (set NODE_PATH): ${e.message}\n`);
    process.exit(1);
}

const client = new OpenAI({ baseURL, apiKey: process.env.OPENAI_API_KEY || 'none', maxRetries: 0 });
const now = () => process.hrtime.bigint();

async function one(i) {
    const start = now();
    const r = { start, ttft: null, itls: [], latency: 0n, chunks: 0, usage: null, text: '', error: '' };
    try {
        const stream = await client.chat.completions.create({
            model: 'm',
            stream: true,
            max_tokens: 16,
            stream_options: { include_usage: true },
            messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
        }, { headers: { 'x-request-id': prefix + i } });
        let first = true, prev = start;
        for await (const chunk of stream) {
            const t = now();
            if (first) {
                r.ttft = t - start;
                first = false;
            } else {
                r.itls.push(t - prev);
            }
            prev = t;
            r.chunks++;
            if (chunk.usage) r.usage = chunk.usage;
            const content = chunk.choices && chunk.choices[0] && chunk.choices[0].delta
                ? chunk.choices[0].delta.content : null;
            if (content) r.text += content;
        }
        r.latency = now() - start;
        if (r.ttft === null) r.error = 'the stream ended without a chunk';
    } catch (e) {
        r.error = (e && (e.stack || e.message)) || String(e) || 'error';
    }
    return r;
}

async function main() {
    const results = new Array(nReq);
    let next = 0;
    async function worker() {
        while (next < nReq) {
            const i = next++;
            results[i] = await one(i);
        }
    }
    const begin = now();
    await Promise.all(Array.from({ length: Math.min(concurrency, nReq) }, worker));
    const end = now();

    const s = (ns) => Number(ns) / 1e9;
    const doc = {
        date: '20250101-000000', endpoint_type: 'openai-chat', backend: 'openai-node', label: null,
        model_id: 'm', tokenizer_id: 'm', num_prompts: nReq, request_rate: 'inf', burstiness: 1.0,
        max_concurrency: concurrency, request_id_prefix: prefix, duration: s(end - begin),
        completed: 0, failed: 0, total_input_tokens: 0, total_output_tokens: 0,
        input_lens: [], output_lens: [], ttfts: [], itls: [], latencies: [],
        start_times: [], generated_texts: [], errors: [],
    };
    for (const r of results) {
        const failed = r.error !== '';
        const u = r.usage || {};
        const nOut = failed ? 0 : (Number.isInteger(u.completion_tokens) ? u.completion_tokens : r.chunks);
        const nIn = Number.isInteger(u.prompt_tokens) ? u.prompt_tokens : 10;
        doc.start_times.push(s(r.start));
        doc.ttfts.push(failed ? 0 : s(r.ttft));
        doc.itls.push(failed ? [] : r.itls.map(s));
        doc.latencies.push(failed ? 0 : s(r.latency));
        doc.output_lens.push(nOut);
        doc.input_lens.push(nIn);
        doc.generated_texts.push(failed ? '' : r.text);
        doc.errors.push(r.error);
        if (failed) {
            doc.failed++;
        } else {
            doc.completed++;
            doc.total_input_tokens += nIn;
        }
        doc.total_output_tokens += nOut;
    }
    try {
        fs.writeFileSync(resultPath, JSON.stringify(doc));
    } catch (e) {
        process.stderr.write(`openai_node_bench.js: cannot write ${resultPath}: ${e.message}\n`);
        process.exit(1);
    }
    console.log(`openai_node_bench.js: ${nReq} requests, ${doc.completed} ok, ${doc.failed} failed, result in ${resultPath}`);
}

main().catch((e) => {
    process.stderr.write(`openai_node_bench.js: ${(e && e.stack) || e}\n`);
    process.exit(1);
});
