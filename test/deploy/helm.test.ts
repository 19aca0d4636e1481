import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * The Helm chart (deploy/helm/wayfind) rendered with the value sets an operator uses: what Kubernetes
 * would run, read back as objects. Needs helm (scripts/setup-helm.sh installs the pinned one into
 * .tools/bin; WAYFIND_HELM names another); without it the suite is skipped, saying so.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const CHART = join(ROOT, "deploy", "helm", "wayfind");
const HELM = process.env.WAYFIND_HELM ?? [join(ROOT, ".tools", "bin", "helm")].find(existsSync) ?? "helm";
const helmMissing = spawnSync(HELM, ["version", "--short"]).status !== 0;
/** The suite's name says why it is skipped, so a run without helm shows it. */
const SUITE = helmMissing
  ? `the Helm chart (skipped: no helm at ${HELM}; bash scripts/setup-helm.sh installs it, WAYFIND_HELM names another)`
  : "the Helm chart";

interface Rendered {
  readonly status: number | null;
  readonly stderr: string;
  readonly objects: K8sObject[];
}
// biome-ignore lint/suspicious/noExplicitAny: manifests are read as plain JSON-like trees.
type K8sObject = { kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string> };

/** `helm template` with `--set-json` values (key → JSON value). */
function render(values: Record<string, unknown> = {}): Rendered {
  const sets = Object.entries(values).flatMap(([key, value]) => [
    "--set-json",
    `${key}=${JSON.stringify(value)}`,
  ]);
  const run = spawnSync(HELM, ["template", "wf", CHART, ...sets], { encoding: "utf8" });
  const objects = run.status === 0 ? parseAllDocuments(run.stdout).map((d) => d.toJS() as K8sObject) : [];
  return { status: run.status, stderr: run.stderr, objects: objects.filter(Boolean) };
}

function one(objects: readonly K8sObject[], kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  expect(found, `one ${kind}`).toHaveLength(1);
  return found[0] as K8sObject;
}

function container(objects: readonly K8sObject[]) {
  return one(objects, "Deployment").spec.template.spec.containers[0];
}

function env(objects: readonly K8sObject[]): Record<string, unknown> {
  return Object.fromEntries(
    container(objects).env.map((e: { name: string; value?: string; valueFrom?: unknown }) => [
      e.name,
      e.value ?? e.valueFrom,
    ]),
  );
}

describe.skipIf(helmMissing)(SUITE, () => {
  it("passes helm lint --strict", () => {
    const lint = spawnSync(HELM, ["lint", "--strict", CHART], { encoding: "utf8" });
    expect(lint.status, lint.stdout + lint.stderr).toBe(0);
  });

  it("runs the server as a non-root user on a read-only root file system, probed on /healthz and /readyz", () => {
    const { objects } = render();
    const deployment = one(objects, "Deployment");
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    expect(container(objects).securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
    });
    expect(container(objects).livenessProbe.httpGet.path).toBe("/healthz");
    expect(container(objects).startupProbe.httpGet.path).toBe("/healthz");
    expect(container(objects).readinessProbe.httpGet.path).toBe("/readyz");
    expect(container(objects).resources).toMatchObject({
      requests: { memory: "256Mi" },
      limits: { memory: "512Mi" },
    });
  });

  it("exposes one port for gRPC, Connect, MCP and the console, named for what a mesh must proxy (HTTP/2)", () => {
    const { objects } = render();
    expect(one(objects, "Service").spec.ports).toEqual([
      { name: "grpc", port: 50051, targetPort: "grpc", protocol: "TCP", appProtocol: "kubernetes.io/h2c" },
    ]);
    expect(container(objects).ports).toEqual([{ name: "grpc", containerPort: 50051, protocol: "TCP" }]);
  });

  it("runs the chart's own release of the image unless told another tag", () => {
    const appVersion = parseAllDocuments(readFileSync(join(CHART, "Chart.yaml"), "utf8"))[0]?.toJS()
      .appVersion;
    // The tag `npm run image` gives its build (scripts/image.sh).
    expect(appVersion).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
    expect(container(render().objects).image).toBe(`localhost/wayfind:${appVersion}`);
    expect(
      container(render({ image: { repository: "r.example/wayfind", tag: "1.2.3" } }).objects).image,
    ).toBe("r.example/wayfind:1.2.3");
  });

  it("bounds the emptyDirs: /tmp always, the data folder where it is one", () => {
    const volumes = (values: Record<string, unknown>) =>
      one(render(values).objects, "Deployment").spec.template.spec.volumes;
    expect(volumes({})).toContainEqual({ name: "tmp", emptyDir: { sizeLimit: "256Mi" } });
    expect(volumes({ persistence: { enabled: false } })).toContainEqual({
      name: "data",
      emptyDir: { sizeLimit: "2Gi" },
    });
  });

  it("keeps the SQLite claim through an upgrade to PostgreSQL (Helm does not delete what it keeps)", () => {
    const installed = one(render().objects, "PersistentVolumeClaim");
    expect(installed.metadata).toMatchObject({ annotations: { "helm.sh/resource-policy": "keep" } });
    const upgraded = render({ postgres: { existingSecret: "wayfind-db" } });
    expect(upgraded.status, upgraded.stderr).toBe(0);
    // No longer rendered: without the annotation Helm would delete the claim and the state on it.
    expect(upgraded.objects.some((o) => o.kind === "PersistentVolumeClaim")).toBe(false);
  });

  it("refuses a database URL in config, which would put its password in a ConfigMap", () => {
    const refused = render({ config: { storage: { postgres: { url: "postgres://u:secret@db/wayfind" } } } });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("put the URL in a Secret and name it in postgres.existingSecret");
  });

  it("has a helm test that asks the service for /readyz", () => {
    const pods = render().objects.filter((o) => o.kind === "Pod");
    expect(pods).toHaveLength(1);
    // biome-ignore lint/suspicious/noExplicitAny: a manifest read as a plain tree.
    const test = pods[0] as any;
    expect(test.metadata.annotations["helm.sh/hook"]).toBe("test");
    expect(test.spec.containers[0].command.join(" ")).toContain("http://wf-wayfind:50051/readyz");
    expect(test.spec.containers[0].securityContext).toMatchObject({ readOnlyRootFilesystem: true });
  });

  it("serves the image's demo on a persistent volume by default: one replica, the old pod stopped first", () => {
    const { objects } = render();
    const deployment = one(objects, "Deployment");
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy.type).toBe("Recreate");
    expect(one(objects, "PersistentVolumeClaim").metadata.name).toBe("wf-wayfind");
    expect(objects.some((o) => o.kind === "ConfigMap")).toBe(false);
    expect(env(objects)).not.toHaveProperty("WAYFIND_CONFIG");
  });

  it("mounts the configuration from values as a ConfigMap, named by WAYFIND_CONFIG, and rolls the pods when it changes", () => {
    const config = {
      tool_search: { preferred_namespaces: ["github"] },
      visibility: [{ match: { tenant: "acme" }, allow: ["*"] }],
    };
    const { objects } = render({ config });
    const configMap = one(objects, "ConfigMap");
    expect(parseAllDocuments(configMap.data?.["wayfind.yaml"] ?? "")[0]?.toJS()).toEqual(config);
    expect(env(objects).WAYFIND_CONFIG).toBe("/etc/wayfind/wayfind.yaml");
    const annotations = one(objects, "Deployment").spec.template.metadata.annotations;
    const changed = render({ config: { ...config, tool_search: {} } });
    expect(one(changed.objects, "Deployment").spec.template.metadata.annotations["checksum/config"]).not.toBe(
      annotations["checksum/config"],
    );
  });

  it("takes the configuration from an existing Secret instead", () => {
    const { objects } = render({ existingConfigSecret: "wayfind-config" });
    const volumes = one(objects, "Deployment").spec.template.spec.volumes;
    expect(volumes).toContainEqual({ name: "config", secret: { secretName: "wayfind-config" } });
    expect(env(objects).WAYFIND_CONFIG).toBe("/etc/wayfind/wayfind.yaml");
  });

  it("runs several replicas on PostgreSQL, its URL from a Secret, each with a data folder of its own", () => {
    const { objects } = render({
      replicaCount: 3,
      postgres: { existingSecret: "wayfind-db", secretKey: "url" },
    });
    const deployment = one(objects, "Deployment");
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.strategy.type).toBe("RollingUpdate");
    expect(env(objects).WAYFIND_DATABASE_URL).toEqual({ secretKeyRef: { name: "wayfind-db", key: "url" } });
    expect(deployment.spec.template.spec.volumes).toContainEqual({
      name: "data",
      emptyDir: { sizeLimit: "2Gi" },
    });
    expect(objects.some((o) => o.kind === "PersistentVolumeClaim")).toBe(false);
    // Node drains leave one running.
    expect(one(objects, "PodDisruptionBudget").spec).toEqual({
      minAvailable: 1,
      selector: { matchLabels: { "app.kubernetes.io/name": "wayfind", "app.kubernetes.io/instance": "wf" } },
    });
    expect(render().objects.some((o) => o.kind === "PodDisruptionBudget")).toBe(false);
  });

  it("refuses more than one replica without PostgreSQL, saying what to set", () => {
    const refused = render({ replicaCount: 2 });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("replicas share their state only through PostgreSQL");
    expect(refused.stderr).toContain("postgres.existingSecret");
  });

  it("adds a ServiceMonitor for /metrics and the Grafana dashboard of docs/grafana when asked", () => {
    const { objects } = render({ serviceMonitor: { enabled: true }, grafanaDashboard: { enabled: true } });
    expect(one(objects, "ServiceMonitor").spec.endpoints).toEqual([
      { port: "grpc", path: "/metrics", interval: "30s" },
    ]);
    const dashboard = one(objects, "ConfigMap");
    expect(dashboard.metadata).toMatchObject({ labels: { grafana_dashboard: "1" } });
    expect(JSON.parse(dashboard.data?.["wayfind-usage.json"] ?? "")).toEqual(
      JSON.parse(readFileSync(join(ROOT, "docs", "grafana", "wayfind-usage.json"), "utf8")),
    );
  });
});
