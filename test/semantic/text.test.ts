import { describe, expect, it } from "vitest";
import { toolEmbeddingText } from "../../src/semantic/text.ts";

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
