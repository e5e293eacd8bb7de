import ArgumentParser
import Foundation
import JSON
import PasskeyFilesIO
import PasskeySettings
import TerminalIO

/// `passkey config`: the effective settings and where each came from.
struct Config: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the effective settings and where each came from.",
        discussion: """
            Each setting comes from a flag, else its environment variable, else the settings file \
            ($XDG_CONFIG_HOME/passkey/settings.toml, else ~/.config/passkey/settings.toml), else its default. \
            Give flags to see what a command given them would use. See Docs/Settings.md.
            """)

    @OptionGroup var format: JSONOption
    @OptionGroup var store: StoreOptions
    @OptionGroup var hybrid: HybridOptions
    @OptionGroup var consent: ConsentOptions

    @OptionGroup var verbosity: OutputOptions

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let file = PasskeyFiles.settingsFile(environment: environment).path
        let present = try processSettingsFile.get() != nil
        let settings = try processSettings(
            flags: store.flags.merging(hybrid.flags) { $1 }.merging(consent.flags) { $1 })
        if format.json {
            printJSON(
                String(
                    decoding: SettingsLines.json(settings, file: file, filePresent: present).serialized(), as: UTF8.self
                ))
        } else {
            for line in SettingsLines.lines(settings, file: file, filePresent: present) { printLine(line) }
        }
    }
}
