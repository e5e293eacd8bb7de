import Basics
import AssociatedDomains
import Foundation
import JSON

/// What `passkey domains check` and `domains list` print: a check's verdict and the approval table, as aligned text
/// or JSON (keys sorted, absent values null).
public enum DomainLines {
    public static func verdict(_ verdict: CheckVerdict) -> [String] {
        var lines = [
            "state    \(verdict.state.rawValue)",
            "reason   \(verdict.reason.terminalSafe)",
            "url      \(verdict.url.terminalSafe)",
            "status   \(verdict.status.map(String.init) ?? "none")",
        ]
        if let signer = verdict.signer { lines.append("signer   \(signer.terminalSafe)") }
        return lines
    }

    /// `state`, `reason`, `url`, `status`, `entitlement`, `app` and `signer`.
    public static func verdictJSON(_ verdict: CheckVerdict, entitlement: Entitlement, app: AppID) -> JSONValue {
        .sortedObject([
            "state": .string(verdict.state.rawValue), "reason": .string(verdict.reason), "url": .string(verdict.url),
            "status": verdict.status.map { .integer($0) } ?? .null, "entitlement": .string(entitlement.description),
            "app": .string(app.description), "signer": verdict.signer.map { .string($0) } ?? .null,
        ])
    }

    /// Two lines an entry: entitlement, app, state and the time checked; then the reason, indented.
    public static func table(_ table: ApprovalTable) -> [String] {
        guard !table.entries.isEmpty else { return ["No domains checked yet (passkey domains check DOMAIN --app ID)."] }
        return table.entries.flatMap { entry in
            [
                "\(entry.entitlement)  \(entry.app)  \(entry.state.rawValue)  \(entry.checked.formatted(.iso8601))"
                    .terminalSafe,
                "    \(entry.reason.terminalSafe)",
            ]
        }
    }

    /// An array with one object an entry: `entitlement`, `app`, `state`, `reason`, `checked` (ISO 8601), `url`,
    /// `status` and `signer`.
    public static func tableJSON(_ table: ApprovalTable) -> JSONValue {
        .array(
            table.entries.map { entry in
                .sortedObject([
                    "entitlement": .string(entry.entitlement), "app": .string(entry.app),
                    "state": .string(entry.state.rawValue), "reason": .string(entry.reason),
                    "checked": .string(entry.checked.formatted(.iso8601)), "url": .string(entry.url),
                    "status": entry.status.map { .integer($0) } ?? .null,
                    "signer": entry.signer.map { .string($0) } ?? .null,
                ])
            })
    }

    /// `domains match`: the verdict, its reason, and the rule that decided with its form.
    public static func link(_ verdict: LinkVerdict) -> [String] {
        var lines = ["verdict  \(verdict.outcome.rawValue)", "reason   \(verdict.reason.terminalSafe)"]
        if let rule = verdict.rule {
            lines.append("rule     \(rule.location.terminalSafe)  \(rule.pattern.terminalSafe)")
            lines.append("form     \(rule.form.rawValue) (\(rule.form))")
        }
        return lines
    }

    /// `verdict`, `reason`, `form` and `rule` (`location`, `detail`, `index`, `pattern`); null without a rule.
    public static func linkJSON(_ verdict: LinkVerdict) -> JSONValue {
        .sortedObject([
            "verdict": .string(verdict.outcome.rawValue), "reason": .string(verdict.reason),
            "form": verdict.rule.map { .string($0.form.rawValue) } ?? .null,
            "rule": verdict.rule.map { rule in
                .sortedObject([
                    "location": .string(rule.location), "detail": .integer(rule.detail),
                    "index": .integer(rule.index), "pattern": .string(rule.pattern),
                ])
            } ?? .null,
        ])
    }

    /// `inspect banner`: the Smart App Banner's app ID, argument and affiliate data; ignored keys and extra tags.
    public static func banner(_ banner: SmartAppBanner) -> [String] {
        var lines = [
            "app-id          \(banner.appID.terminalSafe)",
            "app-argument    \(banner.appArgument?.terminalSafe ?? "absent")",
            "affiliate-data  \(banner.affiliateData?.terminalSafe ?? "absent")",
        ]
        if !banner.unknownKeys.isEmpty {
            lines.append("ignored keys    \(banner.unknownKeys.map(\.terminalSafe).joined(separator: ", "))")
        }
        if banner.tagCount > 1 {
            lines.append("note            the page has \(banner.tagCount) apple-itunes-app tags; only the first counts")
        }
        return lines
    }

    /// `appId`, `appArgument`, `affiliateData` (null when absent), `unknownKeys` and `tags`.
    public static func bannerJSON(_ banner: SmartAppBanner) -> JSONValue {
        .sortedObject([
            "appId": .string(banner.appID), "appArgument": banner.appArgument.map { .string($0) } ?? .null,
            "affiliateData": banner.affiliateData.map { .string($0) } ?? .null,
            "unknownKeys": .strings(banner.unknownKeys), "tags": .integer(banner.tagCount),
        ])
    }
}
