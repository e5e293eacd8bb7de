import Basics
import JSON
import PasskeyProvider

/// What `passkey import` and `passkey export` print: a line for a person, or with `--json` one object for scripts
/// (keys sorted, in the documented style: Docs/CommandLine.md, "JSON output").
public enum ExchangeLines {
    /// `Imported 2 passkeys, 3 saved passwords and 1 one-time code; skipped 1 already in the store; skipped 3
    /// credentials not carried (named above).` Passwords and codes are named only when the file had some.
    public static func importSummary(_ imported: ExchangeService.Imported) -> String {
        var parts = [imported.added.counted("passkey")]
        if imported.passwordsAdded + imported.passwordsAlreadyPresent > 0 {
            parts.append(imported.passwordsAdded.counted("saved password"))
        }
        if imported.oneTimeCodesAdded + imported.oneTimeCodesAlreadyPresent > 0 {
            parts.append(imported.oneTimeCodesAdded.counted("one-time code"))
        }
        var summary =
            "Imported "
            + (parts.count > 1 ? parts.dropLast().joined(separator: ", ") + " and " + parts[parts.count - 1] : parts[0])
        let duplicates =
            imported.skippedDuplicates + imported.passwordsAlreadyPresent + imported.oneTimeCodesAlreadyPresent
        if duplicates > 0 {
            summary += "; skipped \(duplicates) already in the store"
        }
        if imported.otherTypes > 0 {
            summary += "; skipped \(imported.otherTypes.counted("credential")) not carried (named above)"
        }
        return summary + "."
    }

    /// `{"added": N, "clearText": BOOL, "oneTimeCodesAdded": N, "oneTimeCodesAlreadyPresent": N, "passwordsAdded": N,
    /// "passwordsAlreadyPresent": N, "skippedDuplicates": N, "skippedOtherTypes": N}`; `clearText` says the file held
    /// secrets in clear text and should be deleted.
    public static func importJSON(_ imported: ExchangeService.Imported) -> JSONValue {
        .object(omittingNil: [
            ("added", .number(Double(imported.added))),
            ("clearText", .bool(imported.wasClearText)),
            ("oneTimeCodesAdded", .number(Double(imported.oneTimeCodesAdded))),
            ("oneTimeCodesAlreadyPresent", .number(Double(imported.oneTimeCodesAlreadyPresent))),
            ("passwordsAdded", .number(Double(imported.passwordsAdded))),
            ("passwordsAlreadyPresent", .number(Double(imported.passwordsAlreadyPresent))),
            ("skippedDuplicates", .number(Double(imported.skippedDuplicates))),
            ("skippedOtherTypes", .number(Double(imported.otherTypes))),
        ])
    }

    /// `exported 2 passkeys sealed to the importer key FINGERPRINT to FILE; left out …`, for standard error (the
    /// export itself may be on standard output).
    public static func exportSummary(_ exported: ExchangeService.Exported, output: String?) -> String {
        var line = "exported \(exported.count.counted("passkey"))"
        if exported.passwords > 0 { line += ", \(exported.passwords.counted("saved password"))" }
        if exported.oneTimeCodes > 0 { line += ", \(exported.oneTimeCodes.counted("one-time code"))" }
        line += " "
        switch exported.sealedWith {
        case .importerKey(let fingerprint): line += "sealed to the importer key \(fingerprint)"
        case .archive(let kdf, let mebibytes): line += "in a passphrase archive (\(kdf), \(mebibytes) MiB)"
        }
        if let output { line += " to \(output.terminalSafe)" }
        if exported.singleDevice > 0 { line += "; left out \(exported.singleDevice) single-device (BE = 0)" }
        if exported.passwordsLeftOut > 0 {
            line +=
                "; left out \(exported.passwordsLeftOut.counted("saved password or code", plural: "saved passwords or codes")) "
                + "that fail their integrity check"
        }
        return line
    }

    /// `{"exported": N, "file": PATH, "oneTimeCodes": N, "passwords": N, "passwordsLeftOut": N, "sealedWith": {...},
    /// "singleDeviceLeftOut": N}`, where
    /// `sealedWith` is `{"importerKey": FINGERPRINT}` or `{"archive": {"kdf": NAME, "memoryMebibytes": N}}`.
    public static func exportJSON(_ exported: ExchangeService.Exported, output: String) -> JSONValue {
        let sealedWith: JSONValue =
            switch exported.sealedWith {
            case .importerKey(let fingerprint): .object(omittingNil: [("importerKey", .string(fingerprint))])
            case .archive(let kdf, let mebibytes):
                .object(omittingNil: [
                    (
                        "archive",
                        .object(omittingNil: [("kdf", .string(kdf)), ("memoryMebibytes", .number(Double(mebibytes)))])
                    )
                ])
            }
        return .object(omittingNil: [
            ("exported", .number(Double(exported.count))),
            ("file", .string(output)),
            ("oneTimeCodes", .number(Double(exported.oneTimeCodes))),
            ("passwords", .number(Double(exported.passwords))),
            ("passwordsLeftOut", .number(Double(exported.passwordsLeftOut))),
            ("sealedWith", sealedWith),
            ("singleDeviceLeftOut", .number(Double(exported.singleDevice))),
        ])
    }

    /// What `import-key new --json` prints: `{"fingerprint": HEX, "privateKey": PATH, "publicKey": PATH}`.
    public static func importerKeyJSON(fingerprint: String, privateKey: String, publicKey: String) -> JSONValue {
        .object(omittingNil: [
            ("fingerprint", .string(fingerprint)),
            ("privateKey", .string(privateKey)),
            ("publicKey", .string(publicKey)),
        ])
    }
}
