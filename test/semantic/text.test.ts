import { describe, expect, it } from "vitest";
import { toolEmbeddingText } from "../../src/semantic/text.ts";

const tool = (name: string, description: string, extra: { title?: string; argsSchema?: object } = {}) => ({
  name,
  description,
  title: extra.title ?? "",
  argsSchema: (extra.argsSchema ?? {}) as { [key: string]: unknown },
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

  it("leads with the title and ends with the parameters and what they are", () => {
    const forecast = tool("airqualityforecast", "Get the 2-day air quality forecast.", {
      title: "Gimmee Air Quality",
      argsSchema: {
        type: "object",
        properties: { zipCode: { type: "string", description: "A US zip code" }, days: { type: "integer" } },
      },
    });
    expect(toolEmbeddingText(forecast)).toBe(
      "Gimmee Air Quality airqualityforecast: Get the 2-day air quality forecast. Parameters: zip Code (A US zip code), days",
    );
  });
});
