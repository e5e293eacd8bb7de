import ArgumentParser

/// Where a note comes from, or what to do with the one there: `passkey note` and `passkey password note`.
struct NoteOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp("Read the note from this file ('-' for standard input).", valueName: "file"),
        completion: .file())
    var file: String = "-"
    @Flag(help: "Print the note instead of writing one.") var show = false
    @Flag(help: "Remove the note.") var clear = false

    func validate() throws {
        guard !(show && clear) else { throw ValidationError("Give --show or --clear, not both.") }
    }

    /// The note to write, or nil for --clear (read from --file or standard input, `NoteInput`).
    func text() async throws -> String? {
        clear ? nil : try await NoteInput.read(file)
    }
}
