// The console's largest pages on a big usage log (bench/admin.sh): time from asking for the page
// to its content drawn, in Debian's Chromium, median of five loads each.
import { createRequire } from "node:module";
// playwright-core as tests/console installs it.
const require = createRequire(new URL("../tests/console/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const { GATEWAY: gateway, ADMIN_TOKEN: token, ACCOUNT: account } = process.env;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-dev-shm-usage"] });
const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
await page.goto(gateway + "/console");
await page.locator("#token").fill(token);
await page.keyboard.press("Enter");
await page.getByRole("heading", { name: "Overview" }).waitFor();

async function load(label, hash, ready) {
  const times = [];
  for (let i = 0; i < 5; i++) {
    await page.goto("about:blank");
    const started = Date.now();
    await page.goto(gateway + "/console" + hash);
    await ready();
    times.push(Date.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(`| console: ${label} | ${times[2]} ms |`);
}
console.log("| page | median of 5 |\n|---|---|");
await load("overview, 24 h", "#/overview", () => page.locator("svg.chart").first().waitFor());
await load("overview, 30 days", "#/overview?hours=720", () => page.locator("svg.chart").first().waitFor());
await load("the account (keys, 30-day chart, ledger)", "#/accounts/" + account, () => page.getByRole("heading", { name: "Ledger" }).waitFor());
await load("usage explorer, the account's records", "#/usage?account=" + account, () => page.locator("#usage-result tbody tr").first().waitFor());
await load("usage explorer, per day", "#/usage?group_by=day", () => page.locator("#usage-result svg.chart").waitFor());
await browser.close();
