import { checkoutPath } from "../../src/checkout.ts";

/** The model shipped in the repository, which a server uses when nothing else is configured. */
export const MODEL_DIR = checkoutPath("models/all-MiniLM-L6-v2");
