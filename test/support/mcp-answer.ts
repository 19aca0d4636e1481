/**
 * The JSON-RPC message of one answer from `/mcp`: the endpoint answers a request as an event stream
 * (SSE), whose last `data:` event is the response; a plain JSON body is read as it is.
 */
export function answerOf(body: string) {
  const data = body
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice("data:".length).trim());
  const last = body.trimStart().startsWith("{") ? body : data.at(-1);
  if (last === undefined) throw new Error(`no event in the answer: ${body.slice(0, 200)}`);
  return JSON.parse(last);
}
