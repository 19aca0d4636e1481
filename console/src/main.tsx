import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "./styles.css";
import { CatalogPage } from "./pages/catalog.tsx";
import { EventsPage } from "./pages/events.tsx";
import { KeysPage } from "./pages/keys.tsx";
import { OverviewPage } from "./pages/overview.tsx";
import { SearchPage } from "./pages/search.tsx";
import { SkillsPage } from "./pages/skills.tsx";
import { UsagePage } from "./pages/usage.tsx";
import { forgetKey, type Session, SignInError, signIn, storedKey } from "./session.ts";
import { SignInForm } from "./sign-in.tsx";
import { TenantPicker } from "./tenant-picker.tsx";

/** The console's pages, each shown only to a credential holding the role it needs. */
const PAGES = [
  { path: "overview", title: "Overview", shown: (s: Session) => s.agent || s.observer, Page: OverviewPage },
  { path: "catalog", title: "Catalog", shown: (s: Session) => s.agent, Page: CatalogPage },
  { path: "search", title: "Search", shown: (s: Session) => s.agent, Page: SearchPage },
  { path: "events", title: "Live events", shown: (s: Session) => s.observer, Page: EventsPage },
  { path: "usage", title: "Usage and cache", shown: (s: Session) => s.observer, Page: UsagePage },
  { path: "skills", title: "Skills", shown: (s: Session) => s.agent, Page: SkillsPage },
  { path: "keys", title: "Keys", shown: (s: Session) => s.admin, Page: KeysPage },
] as const;

/** Where the tab keeps the operator's choice of tenant. */
const STORED_TENANT = "wayfind.console.tenant";

function currentPath(): string {
  return location.hash.replace(/^#\/?/, "") || "overview";
}

function App() {
  const [session, setSession] = useState<Session | undefined>();
  const [problem, setProblem] = useState<string | undefined>();
  const [checking, setChecking] = useState(true);
  const [path, setPath] = useState(currentPath);
  // Kept in the tab (as the key is), so a reload looks as the same tenant.
  const [tenant, setTenant] = useState(() => sessionStorage.getItem(STORED_TENANT) ?? "");
  const pickTenant = (picked: string) => {
    if (picked === "") sessionStorage.removeItem(STORED_TENANT);
    else sessionStorage.setItem(STORED_TENANT, picked);
    setTenant(picked);
  };

  useEffect(() => {
    const follow = () => setPath(currentPath());
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);

  const attempt = async (key: string | undefined) => {
    setChecking(true);
    try {
      setSession(await signIn(key));
      setProblem(undefined);
    } catch (error) {
      if (key !== undefined) forgetKey();
      // Without a key, "credentials required" just means: show the form.
      const quiet =
        key === undefined && error instanceof SignInError && /requires credentials/.test(error.message);
      setProblem(quiet ? undefined : error instanceof Error ? error.message : String(error));
    } finally {
      setChecking(false);
    }
  };
  useEffect(() => void attempt(storedKey()), []);

  if (!session)
    return checking ? (
      <p class="loading">Connecting to wayfind…</p>
    ) : (
      <SignInForm problem={problem} onKey={attempt} />
    );

  const pages = PAGES.filter((page) => page.shown(session));
  const page = pages.find((p) => p.path === path) ?? pages[0];
  const signOut = () => {
    forgetKey();
    setSession(undefined);
    setProblem(undefined);
  };
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">wayfind</span>
        <nav aria-label="Pages">
          {pages.map((p) => (
            <a key={p.path} href={`#/${p.path}`} aria-current={p === page ? "page" : undefined}>
              {p.title}
            </a>
          ))}
        </nav>
        {session.operator ? <TenantPicker session={session} tenant={tenant} onPick={pickTenant} /> : null}
        {session.withKey ? (
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        ) : null}
      </header>
      <main>
        {page ? (
          <>
            <h1>{page.title}</h1>
            <page.Page key={`${page.path}:${tenant}`} session={session} tenant={tenant} />
          </>
        ) : (
          <p>This credential may not use any page of the console.</p>
        )}
      </main>
    </div>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
