// Parses each Chrome trace given on the command line with the Chrome DevTools trace engine (the importer of the
// DevTools Performance panel, @paulirish/trace_engine): it must parse without error and keep every X slice.
//   node check_trace_engine.mjs trace.json [trace2.json.gz ...]
import fs from 'node:fs';
import zlib from 'node:zlib';
import {analyzeEvents} from '@paulirish/trace_engine/analyze-trace.mjs';

let passed = 0, failed = 0;
for (const file of process.argv.slice(2)) {
  try {
    let buf = fs.readFileSync(file);
    if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
    const json = JSON.parse(buf.toString('utf8'));
    const events = json.traceEvents;
    const slices = events.filter(e => e.ph === 'X').length;
    const {parsedTrace} = await analyzeEvents(events);
    // The renderer handler puts every complete (X) event it keeps on its thread's track: all must be there.
    let kept = 0;
    for (const process of parsedTrace.data.Renderer.processes.values())
      for (const thread of process.threads.values())
        kept += (thread.entries ?? []).filter(e => e.ph === 'X').length;
    if (kept !== slices) throw new Error(`kept ${kept} of ${slices} X slices`);
    console.log(`${file}: parsed ${events.length} events; all ${slices} X slices on their tracks`);
    passed++;
  } catch (e) {
    console.log(`${file}: FAILED: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`);
    failed++;
  }
}
console.log(`trace_engine: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
