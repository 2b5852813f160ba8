/* Refused: the file does not compile. */
int main(void)
{
    return undeclared_name; /* REFUSED: does not compile */
}
