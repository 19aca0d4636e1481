import { describe, expect, it } from "vitest";
import { isStopwordSlip, readRequest } from "../../src/discovery/request.ts";
import { names, openCatalog } from "./helpers.ts";

/** The request's terms, literals in brackets. */
const read = (text: string) =>
  readRequest(text)
    .map((w) => (w.literal ? `[${w.term}]` : w.term))
    .join(" ");

describe("reading a request", () => {
  it("gives the terms analyze() gives, with how each was typed", () => {
    expect(readRequest("Listing the Open issues")).toEqual([
      { term: "list", surface: "listing", literal: false },
      { term: "open", surface: "open", literal: false },
      { term: "issu", surface: "issues", literal: false },
    ]);
  });

  it("marks file names, paths, URLs, e-mail addresses and numbers as literals", () => {
    expect(read("summarise notes.txt")).toBe("summar [note] [txt]");
    expect(read("what does ~/scans/r1.jpg say")).toBe("[scan] [r] [1] [jpg] say");
    expect(read("open https://example.com/docs")).toBe("open [http] [exampl] [com] [doc]");
    expect(read("mail bob@example.com")).toBe("mail [bob] [exampl] [com]");
    expect(read("did CI pass on #512, port 5432, postgres:16")).toBe("ci pass [512] port [5432] postgr [16]");
  });

  it("marks quoted text as literal, but not an apostrophe inside a word", () => {
    expect(read("jokes with the keyword 'mario' about Messi's clubs")).toBe(
      "joke keyword [mario] messi club",
    );
    expect(read('search for "birthday party ideas" please')).toBe("search [birthdai] [parti] [idea]");
  });

  it("keeps words that merely hold a digit or a slash", () => {
    expect(read("upload to ec2 with read/write access")).toBe("upload ec [2] read writ access");
  });
});

describe("slips for stopwords", () => {
  it("recognises a mistyped stopword that is no English word", () => {
    expect(isStopwordSlip("colud")).toBe(true);
    expect(isStopwordSlip("thier")).toBe(true);
    expect(isStopwordSlip("abotu")).toBe(true);
  });

  it("leaves English words and words far from any stopword alone", () => {
    expect(isStopwordSlip("cloud")).toBe(false);
    expect(isStopwordSlip("kubernetes")).toBe(false);
  });
});

describe("literals weigh less than what is asked", () => {
  it("a file extension in the request does not pull in a tool named after it", async () => {
    const { catalog } = openCatalog();
    await catalog.register("s", [
      { name: "fetch_txt", description: "Fetch a URL and return its text" },
      { name: "summarize_document", description: "Summarize a document or file" },
    ]);
    expect(names(catalog.search({ query: "summarise notes.txt" }))[0]).toBe("summarize_document");
  });
});
