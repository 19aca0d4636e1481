import { describe, expect, it } from "vitest";
import { meaningfulDescription, toolEmbeddingText } from "../../src/semantic/text.ts";

const tool = (name: string, description: string, extra: { title?: string } = {}) => ({
  name,
  description,
  title: extra.title ?? "",
});

describe("toolEmbeddingText", () => {
  it("splits snake_case, camelCase, kebab-case and dotted names into words before the description", () => {
    expect(toolEmbeddingText(tool("github.create_pullRequest-v2", "Opens a pull request."))).toBe(
      "github create pull Request v2: Opens a pull request.",
    );
  });

  it("keeps an acronym whole before a capitalised word", () => {
    expect(toolEmbeddingText(tool("parseHTMLPage", ""))).toBe("parse HTML Page");
  });

  it("leads with the title, unless it only repeats the name", () => {
    const forecast = tool("airqualityforecast", "Get the 2-day air quality forecast.", {
      title: "Gimmee Air Quality",
    });
    expect(toolEmbeddingText(forecast)).toBe(
      "Gimmee Air Quality airqualityforecast: Get the 2-day air quality forecast.",
    );
    expect(toolEmbeddingText(tool("get_weather", "Weather.", { title: "get weather" }))).toBe(
      "get weather: Weather.",
    );
  });
});

describe("meaningfulDescription: the sentences that say what a tool does", () => {
  it("leaves out a Google-style docstring's Args and Returns sections", () => {
    const docstring = [
      "",
      "Convert geographic coordinates to a detailed address and location description.",
      "",
      "Args:",
      "    latitude: The latitude coordinate (decimal degrees, WGS84)",
      "    longitude: The longitude coordinate (decimal degrees, WGS84)",
      "    ",
      "Returns:",
      "    Detailed address and location information including:",
      "    - Formatted address",
      "",
    ].join("\n");
    expect(meaningfulDescription(docstring)).toBe(
      "Convert geographic coordinates to a detailed address and location description.",
    );
  });

  it("leaves out reStructuredText fields, with their continuation lines", () => {
    const sphinx = [
      "Send a message to a channel.",
      ":param channel: the channel id,",
      "    as given by list_channels",
      ":type channel: str",
      ":returns: the message's timestamp",
    ].join("\n");
    expect(meaningfulDescription(sphinx)).toBe("Send a message to a channel.");
  });

  it("leaves out parameter lists under headers of other spellings, and keeps the prose after them", () => {
    const listed = [
      "This endpoint pulls DNS data from a domain",
      "",
      "Optional parameters:",
      "> domain - The domain to search",
      "**rtype:** The type of record to pull.",
      "- type: A, PTR or MX",
      "Results come back as JSON records.",
    ].join("\n");
    expect(meaningfulDescription(listed)).toBe(
      "This endpoint pulls DNS data from a domain Results come back as JSON records.",
    );
    expect(meaningfulDescription("Map a website.\n**Arguments:**\n- url: the site\n- limit: how many")).toBe(
      "Map a website.",
    );
  });

  it("leaves out fenced code, JSON dumps and a call example", () => {
    const example = [
      "Check the status of a crawl job.",
      "",
      "**Usage Example:**",
      "```json",
      '{ "name": "firecrawl_check_crawl_status", "arguments": { "id": "550e8400" } }',
      "```",
      "**Returns:** Status and progress of the crawl job.",
    ].join("\n");
    expect(meaningfulDescription(example)).toBe("Check the status of a crawl job.");
    const dump = 'Realtor agents of a city.\n`{\n  "agent_address": {\n    "city": "PLEASANTON"\n  }\n}`';
    expect(meaningfulDescription(dump)).toBe("Realtor agents of a city.");
    expect(meaningfulDescription('Search tools. Input schema {"query": "string"}')).toBe(
      "Search tools. Input schema",
    );
  });

  it("cuts a section that follows a sentence on the same line", () => {
    expect(
      meaningfulDescription("Get the weather for a place. Args: latitude: float, longitude: float"),
    ).toBe("Get the weather for a place.");
  });

  it("keeps a plain description as it is, on one line", () => {
    expect(meaningfulDescription("Current weather and 3-day forecast for a city.")).toBe(
      "Current weather and 3-day forecast for a city.",
    );
    expect(meaningfulDescription("Returns the top 10 gainers:\nby day or week.")).toBe(
      "Returns the top 10 gainers: by day or week.",
    );
  });

  it("keeps a description that is nothing but sections whole, rather than embedding nothing", () => {
    const onlyReturns = "\nReturns:\n- info: core financial metrics\n- news: recent articles\n";
    expect(meaningfulDescription(onlyReturns)).toBe(
      "Returns: - info: core financial metrics - news: recent articles",
    );
  });

  it("is what a tool is embedded from", () => {
    expect(
      toolEmbeddingText(tool("reverse_geocode", "Address of a point.\n\nArgs:\n    latitude: degrees")),
    ).toBe("reverse geocode: Address of a point.");
  });
});
