/** A problem the page met, said where the person looks (and announced to screen readers). */
export function Problem({ text }: { text: string | undefined }) {
  return text ? (
    <p role="alert" class="problem">
      {text}
    </p>
  ) : null;
}
