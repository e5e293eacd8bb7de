import Basics
import Foundation
import JSON
import PasskeySettings

/// `passkey config`: each effective setting, its value and where it came from (`Docs/Settings.md`).
public enum SettingsLines {
    /// Where a value came from, as a person reads it: `flag --relay`, `environment PASSKEY_RELAY`, `file`,
    /// `default`.
    public static func source(_ source: SettingSource, of key: SettingKey) -> String {
        switch source {
        case .flag: "flag \(key.flag)"
        case .environment: "environment \(key.environmentVariable)"
        case .file: "file"
        case .default: "default"
        }
    }

    /// The settings file's line, then one line per setting: its key, its value (`none` when unset) and its source,
    /// in columns. Every line is terminal-safe.
    public static func lines(_ settings: Settings, file: String, filePresent: Bool) -> [String] {
        let entries = settings.entries
        let keyWidth = entries.map { $0.key.fileKey.count }.max() ?? 0
        let values = entries.map { $0.value.isEmpty ? "none" : $0.value.terminalSafe }
        let valueWidth = values.map { $0.count }.max() ?? 0
        var lines = ["settings file: \(file.terminalSafe)\(filePresent ? "" : " (none there)")"]
        for (entry, value) in zip(entries, values) {
            lines.append(
                entry.key.fileKey.padding(toLength: keyWidth, withPad: " ", startingAt: 0) + "  "
                    + value.padding(toLength: valueWidth, withPad: " ", startingAt: 0) + "  "
                    + source(entry.source, of: entry.key))
        }
        return lines
    }

    /// `{"file": PATH, "filePresent": BOOL, "settings": {KEY: {"value": TEXT or null, "source": SOURCE}}}`, with
    /// `source` one of `flag`, `environment`, `file`, `default`.
    public static func json(_ settings: Settings, file: String, filePresent: Bool) -> JSONValue {
        .object(omittingNil: [
            ("file", .string(file)),
            ("filePresent", .bool(filePresent)),
            (
                "settings",
                .object(
                    omittingNil: settings.entries.map { entry -> (String, JSONValue?) in
                        (
                            entry.key.fileKey,
                            .object(omittingNil: [
                                ("value", entry.value.isEmpty ? .null : .string(entry.value)),
                                ("source", .string(entry.source.rawValue)),
                            ])
                        )
                    })
            ),
        ])
    }
}
