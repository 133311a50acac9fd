import Testing

/// Parent of every suite that runs uploads inside the test process.
///
/// URLSession on Linux runs the body reads of every session in the process on one shared
/// serial queue, and a live body's read waits for bytes there (StreamUp.docc/DesignNotes.md). Uploads in
/// one process therefore take turns; running these suites one test at a time keeps one test's
/// idle stream from stalling another's.
@Suite(.serialized) enum InProcessUploads {}
