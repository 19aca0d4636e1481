/**
 * Developer shorthand and everyday synonyms a query may use for words tool descriptions spell out
 * (docs/search.md "Abbreviations and synonyms"). Generic on purpose — nothing here comes from an
 * evaluation set. An operator adds their own with `tool_search.synonyms` (a word to its readings);
 * an entry there replaces the built-in one for the same word.
 */

/** Shorthand read as the words it stands for, at almost a word's full weight. */
const ABBREVIATIONS: Readonly<Record<string, readonly string[]>> = {
  k8s: ["kubernetes"],
  kube: ["kubernetes"],
  ns: ["namespace"],
  gh: ["github"],
  gl: ["gitlab"],
  pr: ["pull request"],
  prs: ["pull requests"],
  mr: ["merge request"],
  repo: ["repository"],
  repos: ["repositories"],
  db: ["database"],
  dbs: ["databases"],
  pg: ["postgres", "postgresql"],
  msg: ["message"],
  msgs: ["messages"],
  dm: ["direct message"],
  js: ["javascript"],
  ts: ["typescript"],
  py: ["python"],
  calc: ["calculate", "calculator"],
  cfg: ["configuration"],
  config: ["configuration"],
  conf: ["configuration"],
  env: ["environment"],
  envs: ["environments"],
  auth: ["authentication", "authorization"],
  creds: ["credentials"],
  dir: ["directory", "folder"],
  dirs: ["directories", "folders"],
  img: ["image"],
  imgs: ["images"],
  pic: ["picture", "image"],
  pics: ["pictures", "images"],
  doc: ["document"],
  docs: ["documents", "documentation"],
  info: ["information"],
  app: ["application"],
  apps: ["applications"],
  org: ["organization"],
  orgs: ["organizations"],
  param: ["parameter"],
  params: ["parameters"],
  arg: ["argument"],
  args: ["arguments"],
  fn: ["function"],
  func: ["function"],
  var: ["variable"],
  vars: ["variables"],
  str: ["string"],
  num: ["number"],
  qty: ["quantity"],
  addr: ["address"],
  tel: ["telephone", "phone"],
  tz: ["timezone"],
  vm: ["virtual machine"],
  vms: ["virtual machines"],
  ci: ["continuous integration", "pipeline"],
  txt: ["text"],
  sms: ["text message"],
  ls: ["list"],
  rm: ["remove", "delete"],
  del: ["delete"],
  mkdir: ["create directory"],
  cp: ["copy"],
  mv: ["move"],
  approx: ["approximately"],
  admin: ["administrator"],
  stats: ["statistics"],
  yt: ["youtube"],
};

/**
 * Everyday synonyms of the words tools are named with: weaker evidence, at 0.3 of a word's weight
 * (0.3 and 0.5 moved public R@5 by under 0.003 either way; the lower weight risks less).
 */
const SYNONYMS: Readonly<Record<string, readonly string[]>> = {
  send: ["post"],
  post: ["send"],
  make: ["create"],
  add: ["create"],
  new: ["create"],
  remove: ["delete"],
  erase: ["delete"],
  fetch: ["get"],
  retrieve: ["get"],
  obtain: ["get"],
  show: ["list", "get"],
  display: ["list", "show"],
  find: ["search"],
  lookup: ["search"],
  look: ["search"],
  edit: ["update"],
  modify: ["update"],
  change: ["update"],
  run: ["execute"],
  execute: ["run"],
  launch: ["start"],
  begin: ["start"],
  halt: ["stop"],
  kill: ["stop", "terminate"],
  email: ["mail"],
  mail: ["email"],
  picture: ["image", "photo"],
  photo: ["image", "picture"],
  image: ["picture", "photo"],
  film: ["movie"],
  movie: ["film"],
  song: ["music", "track"],
  price: ["cost"],
  cost: ["price"],
  weather: ["forecast"],
  forecast: ["weather"],
  translate: ["translation"],
  book: ["reserve"],
  reserve: ["book"],
};

const ABBREVIATION_WEIGHT = 0.9;
const SYNONYM_WEIGHT = 0.3;

/** One way a query word may also be read: the words, and their weight relative to the word's own. */
export interface Reading {
  readonly words: string;
  readonly weight: number;
}

/** The readings of every word: the built-in lists, then the operator's `tool_search.synonyms`. */
export function synonymTable(
  operator: Readonly<Record<string, readonly string[]>> = {},
): ReadonlyMap<string, readonly Reading[]> {
  const table = new Map<string, Reading[]>();
  const add = (entries: Readonly<Record<string, readonly string[]>>, weight: number) => {
    for (const [word, readings] of Object.entries(entries))
      table.set(
        word.toLowerCase(),
        readings.map((words) => ({ words: words.toLowerCase(), weight })),
      );
  };
  add(SYNONYMS, SYNONYM_WEIGHT);
  add(ABBREVIATIONS, ABBREVIATION_WEIGHT);
  // The operator knows their catalog: their readings count like shorthand, and replace ours.
  add(operator, ABBREVIATION_WEIGHT);
  return table;
}
