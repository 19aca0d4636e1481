import { describe, expect, it } from "vitest";
import { readRequest, requestClauses, stopwordSlipOf } from "../../src/search/request.ts";
import { names, openCatalog } from "../discovery/helpers.ts";

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
    expect(stopwordSlipOf("colud")).toBe("could");
    expect(stopwordSlipOf("thier")).toBe("their");
    expect(stopwordSlipOf("abotu")).toBe("about");
  });

  it("leaves English words and words far from any stopword alone", () => {
    expect(stopwordSlipOf("cloud")).toBeUndefined();
    expect(stopwordSlipOf("kubernetes")).toBeUndefined();
  });
});

describe("literals weigh less than what is asked", () => {
  it("a file extension in the request does not pull in a tool named after it", async () => {
    const { catalog } = openCatalog();
    await catalog.registry.register("s", [
      { name: "fetch_txt", description: "Fetch a URL and return its text" },
      { name: "summarize_document", description: "Summarize a document or file" },
    ]);
    expect(names(catalog.index.search({ query: "summarise notes.txt" }))[0]).toBe("summarize_document");
  });
});

describe("a request with several intents", () => {
  it("splits at sentence ends, semicolons and sequence markers", () => {
    expect(
      requestClauses("Find the open issues in acme/api, then post a summary to the eng channel"),
    ).toEqual(["Find the open issues in acme/api", "post a summary to the eng channel"]);
    expect(
      requestClauses("Resize the product photo to 800px; after that upload the file to the bucket"),
    ).toEqual(["Resize the product photo to 800px", "upload the file to the bucket"]);
  });

  it("keeps objects joined by a plain 'and' together, and one intent whole", () => {
    expect(requestClauses("list the pods and services of the staging cluster")).toEqual([]);
  });

  it("leaves out parts too short to be an intent of their own", () => {
    expect(
      requestClauses(
        "Thanks! Please check the weather forecast for Oslo tomorrow. Also convert 250 USD to yen",
      ),
    ).toEqual(["Please check the weather forecast for Oslo tomorrow", "convert 250 USD to yen"]);
  });
});
