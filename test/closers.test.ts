import { describe, expect, it } from "vitest";
import { Closers } from "../src/closers.ts";

describe("Closers", () => {
  it("closes the parts last opened first", async () => {
    const closers = new Closers();
    const closed: string[] = [];
    for (const part of ["model", "storage", "domain", "transport"]) closers.add(() => closed.push(part));
    await closers.close();
    expect(closed).toEqual(["transport", "domain", "storage", "model"]);
  });

  it("waits for each part to close before closing the one opened before it", async () => {
    const closers = new Closers();
    const closed: string[] = [];
    closers.add(() => closed.push("storage"));
    closers.add(async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      closed.push("transport drained");
    });
    await closers.close();
    expect(closed).toEqual(["transport drained", "storage"]);
  });

  it("closes once, however often it is asked", async () => {
    const closers = new Closers();
    let times = 0;
    closers.add(() => times++);
    await Promise.all([closers.close(), closers.close()]);
    await closers.close();
    expect(times).toBe(1);
  });

  it("closes every part when one fails to, and throws the first failure at the end", async () => {
    const closers = new Closers();
    const closed: string[] = [];
    closers.add(() => closed.push("storage"));
    closers.add(() => {
      throw new Error("the model's worker did not stop");
    });
    closers.add(() => closed.push("transport"));
    await expect(closers.close()).rejects.toThrow("the model's worker did not stop");
    expect(closed).toEqual(["transport", "storage"]);
  });

  it("closes what a failed start opened and throws the start's error, not a closer's", async () => {
    const closers = new Closers();
    const closed: string[] = [];
    closers.add(() => closed.push("storage"));
    const start = closers.opening(async () => {
      closers.add(() => {
        throw new Error("a closer failed too");
      });
      throw new Error("port 7070 is in use");
    });
    await expect(start).rejects.toThrow("port 7070 is in use");
    expect(closed).toEqual(["storage"]);
  });

  it("gives a start's result when every step succeeds, closing nothing", async () => {
    const closers = new Closers();
    let closed = false;
    closers.add(() => {
      closed = true;
    });
    expect(await closers.opening(async () => "listening")).toBe("listening");
    expect(closed).toBe(false);
  });

  it("refuses a part opened while closing", async () => {
    const closers = new Closers();
    const closing = closers.close();
    expect(() => closers.add(() => {})).toThrow(/after its owner started closing/);
    await closing;
  });
});
