import { useState } from "preact/hooks";

export interface SignInFormProps {
  readonly problem: string | undefined;
  readonly onKey: (key: string) => void;
}

/** Asks for an API key (`wayfind keys create`); it is kept in this tab's session storage only. */
export function SignInForm({ problem, onKey }: SignInFormProps) {
  const [key, setKey] = useState("");
  return (
    <main class="sign-in">
      <h1>Sign in to wayfind</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim()) onKey(key.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="off"
          placeholder="wf_…"
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
        />
        <button type="submit">Sign in</button>
      </form>
      {problem ? (
        <p role="alert" class="problem">
          {problem}
        </p>
      ) : null}
      <p class="hint">
        Create one with <code>wayfind keys create --tenant T --role observer</code>. It stays in this tab
        only.
      </p>
    </main>
  );
}
